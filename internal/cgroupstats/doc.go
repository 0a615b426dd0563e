// Package cgroupstats reads the resource usage of one cgroup — CPU time,
// memory (usage, working set, RSS, page faults) and process count — from
// cgroup v1 or v2 through github.com/containerd/cgroups/v3, and turns two
// CPU samples into a rate (nano cores). A cgroup is named by its OCI
// cgroupsPath in either driver's form (internal/cgrouppath finds the
// directory).
//
// Rules: it only reads; it never creates, writes or removes a cgroup. The
// working set is computed as kubelet (cAdvisor) does: usage minus inactive
// file pages, never below zero. A cgroup that does not exist is reported as
// errdefs.ErrNotFound.
package cgroupstats
