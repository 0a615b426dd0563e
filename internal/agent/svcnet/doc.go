// Package svcnet keeps the host side of the agent's Services: a dummy
// network interface the agent owns (a bridge without ports where the
// kernel has no dummy driver; either is marked with the link alias
// "berth service addresses") (default berth-svc0, as kube-proxy's
// kube-ipvs0) holding each ClusterIP and the cluster DNS address as a /32,
// so that pods reach them through their default route to the host and the
// agent's proxy and DNS server can listen on them.
//
// Links and addresses are made with github.com/vishvananda/netlink. Sync
// makes the interface hold exactly the addresses given (adding and
// removing), Remove deletes the interface; a link of that name without the
// agent's alias is never changed (it is not the agent's).
package svcnet
