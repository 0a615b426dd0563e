package svcproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rule is one published port: where it listens on the host and the ready
// endpoints it spreads over.
type Rule struct {
	Name     string // for logs and errors, e.g. "default/web:http (NodePort 30080)"
	Protocol string // "TCP" or "UDP"
	Listen   netip.AddrPort
	Backends []netip.AddrPort
	// Affinity, when not 0, is a ClientIP session affinity's timeout: a
	// client address keeps to the endpoint it reached while it connects
	// again within it. The rules of one AffinityGroup (a Service port's
	// ClusterIP, NodePort and LoadBalancer listeners) share the sessions.
	Affinity      time.Duration
	AffinityGroup string
	// Service is the Service whose port the rule publishes (namespace/
	// name): its rules share Limits.MaxConnsPerService. Default Name.
	Service string
	// Redirected: the listener binds Listen's address at a port the
	// kernel chooses, not at Listen's port (clients reach it through the
	// agent's DNAT of Listen: see Proxy.Bound).
	Redirected bool
}

func (r Rule) key() string { return strings.ToUpper(r.Protocol) + " " + r.Listen.String() }

// listener is a published port of either protocol.
type listener interface {
	close() error
	addr() netip.AddrPort // where it listens
}

// Proxy holds the published ports.
type Proxy struct {
	log         *slog.Logger
	dialTimeout time.Duration
	limits      Limits
	conns       *connCount // the TCP connections held

	now   func() time.Time      // the clock of session affinity
	allow func(netip.Addr) bool // the redirected listeners' clients (AllowClients); nil: all

	mu       sync.Mutex
	ports    map[string]*port
	sessions map[string]*sessions // by Rule.AffinityGroup
}

// port is one listener and the backends it currently uses.
type port struct {
	rule     Rule
	backends atomic.Pointer[[]netip.AddrPort]
	next     atomic.Uint64
	sessions atomic.Pointer[sessions] // nil: no session affinity
	l        listener
	refusals // connections over a limit
}

// service is the key of the rule's per-Service connection limit.
func (r Rule) service() string {
	if r.Service != "" {
		return r.Service
	}
	return r.Name
}

// New makes a proxy with no ports; zero fields of limits take their
// defaults.
func New(log *slog.Logger, limits Limits) *Proxy {
	limits = limits.WithDefaults()
	return &Proxy{log: log, dialTimeout: 2 * time.Second, limits: limits,
		conns: newConnCount(limits),
		now:   time.Now, ports: map[string]*port{}, sessions: map[string]*sessions{}}
}

// Update makes the published ports those of rules: new ones listen, gone
// ones close, the backends of the others are replaced. A port that cannot
// listen (taken by another program) is reported in the error, naming its
// rule; the other rules apply.
func (p *Proxy) Update(rules []Rule) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[string]Rule{}
	var errs []error
	for _, r := range rules {
		if err := r.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		want[r.key()] = r
	}
	for k, pt := range p.ports {
		if _, ok := want[k]; !ok {
			errs = append(errs, pt.l.close())
			delete(p.ports, k)
		}
	}
	groups := p.updateSessions(want)
	for k, r := range want {
		if pt, ok := p.ports[k]; ok {
			pt.setBackends(r.Backends)
			pt.sessions.Store(groups[r.AffinityGroup])
			continue
		}
		pt, err := p.open(r, groups[r.AffinityGroup])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: listening on %s %s: %w", r.Name, r.Protocol, r.Listen, err))
			continue
		}
		p.ports[k] = pt
	}
	return errors.Join(errs...)
}

// updateSessions keeps the session tables of the rules with affinity
// (ending the sessions whose time or endpoint is gone) and drops the
// others'. It returns the tables by group; a rule without affinity has
// none.
func (p *Proxy) updateSessions(rules map[string]Rule) map[string]*sessions {
	now := p.now()
	groups := map[string]*sessions{}
	for _, r := range rules {
		if r.Affinity <= 0 {
			continue
		}
		s := p.sessions[r.AffinityGroup]
		if s == nil {
			s = newSessions()
			p.sessions[r.AffinityGroup] = s
		}
		s.update(r.Affinity, r.Backends, now)
		groups[r.AffinityGroup] = s
	}
	for g := range p.sessions {
		if groups[g] == nil {
			delete(p.sessions, g)
		}
	}
	return groups
}

func (r Rule) validate() error {
	switch {
	case r.Protocol != "TCP" && r.Protocol != "UDP":
		return fmt.Errorf("%s: protocol %q: only TCP and UDP are published", r.Name, r.Protocol)
	case !r.Listen.IsValid() || r.Listen.Port() == 0:
		return fmt.Errorf("%s: listen address %q is not an address and port", r.Name, r.Listen)
	}
	return nil
}

func (p *Proxy) open(r Rule, s *sessions) (*port, error) {
	pt := &port{rule: r}
	pt.setBackends(r.Backends)
	pt.sessions.Store(s)
	var err error
	if r.Protocol == "TCP" {
		pt.l, err = p.listenTCP(pt)
	} else {
		pt.l, err = p.listenUDP(pt)
	}
	if err != nil {
		return nil, err
	}
	return pt, nil
}

// Close closes every published port.
func (p *Proxy) Close() error {
	return p.Update(nil)
}

func (pt *port) setBackends(b []netip.AddrPort) {
	b = append([]netip.AddrPort(nil), b...)
	pt.backends.Store(&b)
}

// pick returns the backends in the order to try them for one connection
// of client: its session's endpoint first (with ClientIP affinity), then
// round robin from the next one.
func (pt *port) pick(client netip.Addr, now time.Time) []netip.AddrPort {
	b := *pt.backends.Load()
	if len(b) == 0 {
		return nil
	}
	start := int((pt.next.Add(1) - 1) % uint64(len(b)))
	return pt.order(client, append(append([]netip.AddrPort(nil), b[start:]...), b[:start]...), now)
}
