package clusterdns

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// DefaultMaxForwards bounds the questions forwarded upstream at once (each
// holds a socket and a goroutine until its answer or the timeout).
const DefaultMaxForwards = 256

// errBusy: MaxForwards questions are forwarded already.
var errBusy = errors.New("too many questions forwarded at once")

// guard keeps a server from forwarding to itself and from forwarding
// without bound:
//   - an upstream among Options.Own, or at the address the server listens
//     on (with an unspecified one, at its port on a loopback or interface
//     address of the host), is never asked;
//   - a forwarded question goes out with a random ID of its own and is
//     remembered until its answer: one that comes back to the server (an
//     upstream that forwards to it, directly or through relays that keep
//     the ID) is answered SERVFAIL at once instead of forwarded again;
//   - at most MaxForwards questions are out at once; one beyond is
//     answered REFUSED.
//
// An upstream that forwards back through resolvers that change IDs is
// found by loop.go's probe, and identical questions share a forward
// (forward.go), so such a loop costs one forward.
type guard struct {
	forwards chan struct{} // a token per question out
	ownNets  []netip.Prefix
	self     atomic.Pointer[[]netip.AddrPort] // where the server listens
	hostIPs  atomic.Pointer[[]netip.Addr]     // with an unspecified listen address

	mu       sync.Mutex
	inflight map[question]string // questions out, to the upstream asked

	warned atomic.Int64 // unix nanoseconds of the last loop warning
}

// question is a forwarded question as it comes back if it loops.
type question struct {
	id           uint16
	name         string
	qtype, class uint16
}

func (g *guard) init(o Options) {
	if o.MaxForwards <= 0 {
		o.MaxForwards = DefaultMaxForwards
	}
	g.forwards = make(chan struct{}, o.MaxForwards)
	g.ownNets = o.Own
	g.inflight = map[question]string{}
}

func questionOf(m *dns.Msg) question {
	q := m.Question[0]
	return question{id: m.Id, name: strings.ToLower(q.Name), qtype: q.Qtype, class: q.Qclass}
}

// out is req as it goes to up: with an ID no other question out of the
// same name and type has, remembered until done is called.
func (g *guard) out(req *dns.Msg, up string) (m *dns.Msg, done func()) {
	m = req.Copy()
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		m.Id = dns.Id()
		q := questionOf(m)
		if _, taken := g.inflight[q]; !taken {
			g.inflight[q] = up
			return m, func() {
				g.mu.Lock()
				delete(g.inflight, q)
				g.mu.Unlock()
			}
		}
	}
}

// cameBack reports whether req is a question the server forwarded, and
// to which upstream.
func (g *guard) cameBack(req *dns.Msg) (string, bool) {
	if len(req.Question) != 1 {
		return "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	up, ok := g.inflight[questionOf(req)]
	return up, ok
}

// ownStatic reports whether upstream (host:port) is among Options.Own.
func (g *guard) ownStatic(upstream string) bool {
	ap, err := netip.ParseAddrPort(upstream)
	if err != nil {
		return false // a host name: not checked
	}
	return slices.ContainsFunc(g.ownNets, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) })
}

// own reports whether upstream is the server's own address.
func (g *guard) own(upstream string) bool {
	if g.ownStatic(upstream) {
		return true
	}
	ap, err := netip.ParseAddrPort(upstream)
	self := g.self.Load()
	if err != nil || self == nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, l := range *self {
		switch {
		case l.Port() != ap.Port():
		case l.Addr().Unmap() == a:
			return true
		case l.Addr().IsUnspecified() && (a.IsLoopback() || a.IsUnspecified() || slices.Contains(*g.hostIPs.Load(), a)):
			return true
		}
	}
	return false
}

// listening records where the server listens.
func (g *guard) listening(addrs ...net.Addr) {
	var self []netip.AddrPort
	var hostIPs []netip.Addr
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			continue
		}
		self = append(self, ap)
		if ap.Addr().IsUnspecified() && hostIPs == nil {
			hostIPs = interfaceAddrs()
		}
	}
	g.hostIPs.Store(&hostIPs)
	g.self.Store(&self)
}

func interfaceAddrs() []netip.Addr {
	out := []netip.Addr{}
	as, _ := net.InterfaceAddrs() // none known: loopback still counts
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// warnLoop says, at most once a minute, that a question came back.
func (s *Server) warnLoop(upstream string, req *dns.Msg) {
	now := time.Now().UnixNano()
	last := s.warned.Load()
	if now-last < int64(time.Minute) || !s.warned.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("cluster DNS: a question it forwarded came back to it: the upstream server forwards to the cluster DNS (a loop); answering SERVFAIL",
		"upstream", upstream, "question", req.Question[0].String())
}
