package svcproxy

import (
	"net/netip"
	"slices"
	"sync"
	"time"
)

// maxSessions bounds the clients one Service port remembers: beyond it a
// new client is spread round robin without being remembered, so that ever
// new source addresses cannot grow the agent's memory without end.
const maxSessions = 1 << 16

// sessions is the ClientIP session affinity of one Service port, shared
// by its listeners (ClusterIP, NodePort, LoadBalancer), as kube-proxy's:
// a client address goes to the endpoint it last reached for as long as
// it comes back within the timeout of its last connection; an endpoint
// that leaves the port's backends (gone, or not ready) ends its sessions.
type sessions struct {
	mu       sync.Mutex
	timeout  time.Duration
	byClient map[netip.Addr]session
}

type session struct {
	backend netip.AddrPort
	last    time.Time
}

func newSessions() *sessions { return &sessions{byClient: map[netip.Addr]session{}} }

// update sets the timeout and forgets the sessions that ended: expired at
// now, or on an endpoint no longer in backends.
func (s *sessions) update(timeout time.Duration, backends []netip.AddrPort, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeout = timeout
	for client, ss := range s.byClient {
		if now.Sub(ss.last) >= timeout || !slices.Contains(backends, ss.backend) {
			delete(s.byClient, client)
		}
	}
}

// lookup returns the client's endpoint if its session is still on.
func (s *sessions) lookup(client netip.Addr, now time.Time) (netip.AddrPort, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byClient[client]
	if !ok || now.Sub(ss.last) >= s.timeout {
		return netip.AddrPort{}, false
	}
	return ss.backend, true
}

// remember starts or renews the client's session on backend.
func (s *sessions) remember(client netip.Addr, backend netip.AddrPort, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byClient[client]; !ok && len(s.byClient) >= maxSessions {
		return
	}
	s.byClient[client] = session{backend: backend, last: now}
}

// order puts the client's session endpoint first, if it has one among
// the backends b; the others keep their (round-robin) order.
func (pt *port) order(client netip.Addr, b []netip.AddrPort, now time.Time) []netip.AddrPort {
	s := pt.sessions.Load()
	if s == nil {
		return b
	}
	mine, ok := s.lookup(client, now)
	if !ok {
		return b
	}
	i := slices.Index(b, mine)
	if i <= 0 {
		return b
	}
	return append([]netip.AddrPort{mine}, slices.Delete(b, i, i+1)...)
}

// connected records that the client reached backend (a session's start
// or renewal), when the port has session affinity.
func (pt *port) connected(client netip.Addr, backend netip.AddrPort, now time.Time) {
	if s := pt.sessions.Load(); s != nil {
		s.remember(client, backend, now)
	}
}
