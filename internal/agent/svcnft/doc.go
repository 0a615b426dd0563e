// Package svcnft programs the agent's nftables table for its Services
// (github.com/kubernetes-sigs/knftables, kube-proxy's library, which
// drives the nft binary; table "ip <name>", named after the service
// interface).
//
// The agent's proxy and DNS server listen on the ClusterIPs and the DNS
// address at ports the kernel chooses (never on a Service's own port:
// a socket on ClusterIP:80 would make a host daemon's bind of 0.0.0.0:80
// fail). The table's nat chains (prerouting for pods, output for the
// host's own processes) DNAT ClusterIP:port/protocol to that listener
// through the map "redirects", so clients keep using ClusterIP:port.
// Its filter chains keep the ClusterIPs and the DNS address to this node:
// before NAT, a packet for a local address in the set "guarded" (exactly
// the addresses on the service link: the ClusterIPs and the DNS address,
// never the whole service range, whose other addresses may be the
// host's) is accepted only from the host itself (it comes in on lo) or
// from a pod of this node: its source is in the set "pods" and it came in
// on the interface the route back to it leaves by (a strict reverse-path
// check; a bridged pod's packet comes in on the bridge, br_netfilter or
// not); anything else is dropped. After NAT, a new connection to such an
// address that no redirect translated (another port, a listener's own
// port) is rejected, as kube-proxy rejects a ClusterIP's unknown ports.
//
// Fill is pure: it writes the whole table into a transaction. Table.Sync
// replaces the table whole in one transaction (delete and add), so a
// crashed agent's next start rebuilds it from its Services; an unchanged
// table is rewritten after Resync, or at once when a listing every
// Recheck finds a chain gone. AddPods adds a started pod's addresses at
// once, between two syncs; Pods reads the kernel's set (a starting agent
// keeps its predecessor's until its workers run).
package svcnft
