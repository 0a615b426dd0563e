// Package cgroupstats reads the resource usage of one cgroup — CPU time
// (user, system, CFS throttling), memory (usage, working set, RSS, cache,
// mapped files, swap, kernel, peak, failures, OOM kills, page faults),
// tasks and their limit, huge pages, block I/O per device and pressure
// stall information — from cgroup v1 or v2, mostly through
// github.com/containerd/cgroups/v3, and turns two CPU samples into a rate
// (nano cores). Processes reads what procfs tells of the cgroup's
// processes (count, file descriptors, sockets, the init process's open
// files limit), with bounded work. A cgroup is named by its OCI
// cgroupsPath in either driver's form (internal/cgrouppath finds the
// directory).
//
// Rules: it only reads; it never creates, writes or removes a cgroup. The
// working set is computed as kubelet (cAdvisor) does: usage minus inactive
// file pages, never below zero; the other figures are those cAdvisor takes
// from the same files. A cgroup that does not exist is reported as
// errdefs.ErrNotFound by Read; Processes finds no processes in it.
package cgroupstats
