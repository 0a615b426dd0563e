// Package hostcgroup finds out which cgroup controllers containers can use
// on this host, so that berth leaves out of a container's spec the settings
// the host cannot apply (runc fails the whole container otherwise: kubelet
// always sends hugepage limits, one per page size, even where the hugetlb
// controller is not mounted).
//
// cgroup v1 (and the hybrid layout: v1 controllers plus a cgroup2 mount
// without controllers): a controller is usable when a v1 hierarchy mounts
// it; swap limits need memory.memsw.* in the memory hierarchy. cgroup v2
// (a cgroup2 file system at the cgroup mount root): a controller is usable
// when the root's cgroup.controllers lists it; swap limits need
// memory.swap.max, looked for in this process's own cgroup or a child of
// the root.
//
// Names are the kernel's v1 names (cpu, cpuset, memory, hugetlb, pids,
// rdma, blkio) plus "io" (v2's blkio) and "memsw" (swap accounting).
//
// SystemdRunning checks, for cgroup_driver = "systemd", that systemd is the
// service manager and answers on its private socket, so that berth serve
// refuses to start rather than fail every container later.
package hostcgroup
