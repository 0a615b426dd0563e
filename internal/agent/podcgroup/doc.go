// Package podcgroup makes, sizes and removes the pods' own cgroups on the
// host, as kubelet's pod container manager does: the cgroup that is the
// parent of a pod's sandbox and container cgroups, laid out as package
// podspec says (PodCgroupParent for the cgroupfs driver, PodSlice for the
// systemd one). Before a pod's sandbox is made, Ensure creates it with the
// pod's CPU weight, CPU quota, memory limit and huge page limits
// (podspec.PodCgroup); once the pod is gone, Remove takes it away (rmdir
// of what is empty, or a stop of the empty slice).
//
// The cgroup files are written by opencontainers/cgroups, the library
// kubelet and runc use (cgroup v1 and v2, cgroupfs and systemd); only an
// empty cgroup is ever removed.
package podcgroup
