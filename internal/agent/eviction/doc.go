// Package eviction is the agent's eviction manager, as kubelet's
// pkg/kubelet/eviction: it holds the eviction thresholds (Parse reads
// kubelet's --eviction-hard, --eviction-soft, --eviction-soft-grace-period
// and --eviction-minimum-reclaim maps; Defaults are kubelet's hard
// thresholds), compares them with Observations of the node's signals
// (memory.available, nodefs.available, nodefs.inodesFree,
// imagefs.available, imagefs.inodesFree, pid.available; HostObserver reads
// them from the host and the runtime's image filesystem), derives the node
// conditions (MemoryPressure, DiskPressure, PIDPressure, kept for the
// pressure transition period after the last observation), admits or
// rejects pods under pressure (Manager.Admit) and ranks pods for eviction
// (Rank: memory by usage above requests, then priority, then usage above
// requests; disk by local storage the same way; PIDs by priority, then
// process count).
//
// It decides and formats kubelet's messages; it acts on nothing: the
// agent reclaims node resources, kills the pod and records the events.
// Everything takes the time as an argument, so tests step it.
package eviction
