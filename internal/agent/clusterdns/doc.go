// Package clusterdns is the node agent's DNS server for Services: the
// names of Kubernetes' DNS-based service discovery specification, answered
// from the Services and ready endpoints of this node, everything else
// forwarded to the host's upstream servers.
//
// A ClusterIP Service's name (<svc>.<ns>.svc.<zone>) resolves to its
// ClusterIP (the agent's service proxy listens there); a headless
// Service's to the addresses of its ready endpoints. An endpoint with a hostname (a pod with
// hostname and subdomain, a StatefulSet pod) also has
// <hostname>.<svc>.<ns>.svc.<zone>; named ports have SRV records
// _<port>._<proto>.<svc>.<ns>.svc.<zone>; endpoint addresses have PTR
// records; every pod address has <a-b-c-d>.<ns>.pod.<zone>. An
// ExternalName Service's name is a CNAME to its externalName; the server
// follows it as CoreDNS's kubernetes plugin does (cname.go): a target in
// the zone from the table, any other through the upstream servers.
//
// The server never forwards to itself (guard.go, loop.go): an upstream
// among the agent's own addresses (Options.Own: the Service range) or at
// the address it listens on is never asked; once it listens, it asks each
// upstream a probe question no one else asks (HINFO
// <random>.<random>.berth-loop-probe., as CoreDNS's loop plugin), and an
// upstream whose probe comes back to it is never asked again (a Warning
// names it); a forwarded question goes out with a random ID of its own
// and is remembered until its answer, so that one coming back (through
// relays that keep the ID) is answered SERVFAIL at once. Identical
// questions out at once share one forward (forward.go), so a loop formed
// later through a resolver that gives each question a new ID costs one
// forward: the copy that comes back joins the forward it came from, and
// both end SERVFAIL when it times out. At most Options.MaxForwards
// questions are out at once, one beyond answered REFUSED as CoreDNS's
// forward max_concurrent.
//
// The records are built into an immutable Table (table.go) that the server
// swaps atomically on each Update, so a query never sees half an update.
// Packets are parsed and written by github.com/miekg/dns.
package clusterdns
