// Package network owns everything about a pod's network and its namespaces.
//
// It is the only berth package that calls CNI (through libcni) and the only
// one that makes namespace syscalls (unshare, setns, bind mounts of nsfs
// files). It has four parts:
//
//   - Namespace pinning (Pin, Unpin, IsPinned): a pod's net, IPC and UTS
//     namespaces are created on a throwaway OS thread and kept alive as bind
//     mounts of their nsfs files, so no process is needed to hold them. The
//     thread that created them is never returned to Go's scheduler.
//   - CNI (CNI, Setup, Teardown, Ready): the pod's lo brought up in-process
//     (rtnetlink in its namespace), then the first network config in the
//     config directory, in lexical order, as kubelet does. Teardown works
//     from libcni's result cache, also after the namespace is gone; it then
//     lends the plugins a short-lived stand-in namespace that carries the
//     pod's old addresses, so that plugins which find their iptables rules
//     through the interface (bridge ipMasq) still remove them.
//   - The default network (InstallDefault, PrepareDefault,
//     UpdateDefaultSubnet): a bridge + portmap config berth writes only
//     into an empty config directory and marks as its own; its masquerade
//     is one node-wide nftables rule per subnet, and its pods without host
//     ports skip portmap.
//   - Per-pod files bind-mounted into containers: hostname, hosts,
//     resolv.conf.
//
// Rules: every create step has an undo that runs on failure; Teardown and
// Unpin are idempotent; input errors wrap errdefs.ErrInvalidArgument and name
// the field.
package network
