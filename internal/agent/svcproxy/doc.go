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
// A UDP port holds at most DefaultUDPMaxFlows client flows at once; a
// failed accept of a TCP port is retried with a back-off.
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
