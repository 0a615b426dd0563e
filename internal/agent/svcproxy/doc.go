// Package svcproxy serves Service ports: each ClusterIP:port (on the
// agent's service interface), NodePort and LoadBalancer port of a Service
// is a listener of the agent's that spreads connections (TCP) and client
// flows (UDP) over the Service's ready endpoints' target ports, round
// robin, skipping an endpoint that refuses a connection.
//
// It is a user-space proxy, as kube-proxy's first mode was: one node has
// no other nodes to route to, and a proxy in the agent works the same on
// every runtime the agent drives, without programming the host's packet
// filter. Update swaps the endpoints of a port at once (readiness removes
// an endpoint from the next connection on), opens listeners for new ports
// and closes those of ports gone; connections already made keep going.
// A failed accept of a TCP port is retried with a back-off.
//
// Limits (limits.go) bound what clients can make the agent hold. The TCP
// connections and UDP flows proxied at once are capped in all (MaxConns);
// the TCP connections of a Service (its ports and listeners together) in
// MaxConnsPerService, those of one client address to a Service in
// MaxConnsPerSource: a connection over a cap is accepted and reset at
// once, so the accept loop never stops draining (a client learns at once
// instead of waiting in a full backlog), and the count is released on
// every path of a connection's end. A proxied connection holds two
// descriptors, its sockets: the copy goes through a pooled buffer taken
// only once a side is readable, not io.Copy's splice(2), whose pipes cost
// two more descriptors per direction (copy.go). A connection is closed
// when no byte went either way for TCPFirstByte since it was made, for
// TCPIdle since the last, or for TCPHalfClosed once a side has ended (a
// side's end is passed on as a half close and the other way goes on).
//
// A UDP port holds at most UDPMaxFlows flows, UDPMaxFlowsPerSource of one
// client IP; each flow holds its socket and a goroutine, and a buffer
// only while a datagram of its endpoint's is passed on. A new flow evicts
// one as flows.go says: an address at its cap ends its own least recently
// active flow; a full table ends its least recently active flow not yet
// assured (its client spoke again after the endpoint answered, and 2 s
// after the flow began: conntrack's UDP stream), as conntrack's early
// drop, once those hold an eighth of the table, else its least recently
// active flow. A flood of spoofed sources thus churns only its own flows,
// and clients that talk keep theirs. At MaxConns, a port ends one of its
// own flows for a new one, and one without flows drops the datagram.
//
// A rule with Affinity (a Service's sessionAffinity ClientIP) sends a
// client address to the endpoint it last reached, as kube-proxy does,
// while it connects again (TCP) or opens a flow (UDP) within the timeout
// of its last one; the rules of one AffinityGroup (a Service port's
// ClusterIP, NodePort and LoadBalancer listeners) share these sessions
// (affinity.go). An endpoint that leaves the rule's backends ends its
// sessions; one that refuses moves the client's session to the next.
// The proxy's clock (Proxy.now) is a seam for tests.
package svcproxy
