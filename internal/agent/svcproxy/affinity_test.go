package svcproxy

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock is the proxy's clock, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(p *Proxy) *fakeClock {
	c := &fakeClock{t: time.Unix(1000, 0)}
	p.now = c.now
	return c
}

// ClientIP affinity: a client keeps to the endpoint it reached while it
// comes back within the timeout of its last connection; after it, round
// robin picks again.
func TestTCPClientIPAffinity(t *testing.T) {
	a, b := tcpBackend(t, "a"), tcpBackend(t, "b")
	p := newProxy(t, Limits{})
	clock := withClock(p)
	listen := freePort(t, "TCP")
	rule := Rule{Name: "r", Protocol: "TCP", Listen: listen, Backends: addrs(a, b), Affinity: 10 * time.Second, AffinityGroup: "default/web TCP 80"}
	if err := p.Update([]Rule{rule}); err != nil {
		t.Fatal(err)
	}
	// Round robin would answer a, b, a, b, a: the session keeps a.
	for i := range 5 {
		if got := askTCP(t, listen, "x"); got != "a:x" {
			t.Fatalf("connection %d: %q; want a's answer (the session's)", i, got)
		}
		clock.step(6 * time.Second) // within the timeout of the last one
	}
	// 10 s after the last connection the session is over: round robin's
	// next is b, and b's session starts.
	clock.step(4 * time.Second)
	for i := range 3 {
		if got := askTCP(t, listen, "x"); got != "b:x" {
			t.Fatalf("after the timeout, connection %d: %q; want b's answer", i, got)
		}
	}
}

// An endpoint that leaves the backends (gone, or not ready) ends its
// sessions: the client's next session is on another endpoint, and stays
// there when the first comes back. Update drops expired sessions too.
func TestAffinityEndsWithItsEndpoint(t *testing.T) {
	a, b := tcpBackend(t, "a"), tcpBackend(t, "b")
	p := newProxy(t, Limits{})
	clock := withClock(p)
	listen := freePort(t, "TCP")
	rule := Rule{Name: "r", Protocol: "TCP", Listen: listen, Backends: addrs(a, b), Affinity: time.Hour, AffinityGroup: "g"}
	update := func(backends ...*backend) {
		t.Helper()
		rule.Backends = addrs(backends...)
		if err := p.Update([]Rule{rule}); err != nil {
			t.Fatal(err)
		}
	}
	update(a, b)
	if got := askTCP(t, listen, "x"); got != "a:x" {
		t.Fatalf("first connection: %q", got)
	}
	update(b)
	update(a, b)
	for range 3 {
		if got := askTCP(t, listen, "x"); got != "b:x" {
			t.Fatalf("after a left and came back: %q; want b's (the new session's)", got)
		}
	}
	if n := sessionCount(p, "g"); n != 1 {
		t.Errorf("%d sessions; want 1", n)
	}
	clock.step(time.Hour)
	update(a, b)
	if n := sessionCount(p, "g"); n != 0 {
		t.Errorf("%d sessions after the timeout and an update; want none", n)
	}
	// Without affinity the sessions go.
	rule.Affinity = 0
	update(a, b)
	if n := sessionCount(p, "g"); n != -1 {
		t.Errorf("%d sessions after affinity was turned off; want no table", n)
	}
}

// The listeners of one Service port (ClusterIP and NodePort) share the
// sessions; an endpoint that refuses moves the session to the next.
func TestAffinityIsSharedAndSkipsARefusingEndpoint(t *testing.T) {
	a, b := tcpBackend(t, "a"), tcpBackend(t, "b")
	p := newProxy(t, Limits{})
	withClock(p)
	l1, l2 := freePort(t, "TCP"), freePort(t, "TCP")
	rules := []Rule{
		{Name: "ClusterIP", Protocol: "TCP", Listen: l1, Backends: addrs(a, b), Affinity: time.Minute, AffinityGroup: "g"},
		{Name: "NodePort", Protocol: "TCP", Listen: l2, Backends: addrs(a, b), Affinity: time.Minute, AffinityGroup: "g"},
	}
	if err := p.Update(rules); err != nil {
		t.Fatal(err)
	}
	first := askTCP(t, l1, "x")
	for range 4 {
		if got := askTCP(t, l2, "x"); got != first {
			t.Fatalf("through the other listener: %q; want %q (the shared session's)", got, first)
		}
	}
	// The session's endpoint stops answering before the next update.
	map[string]*backend{"a:x": a, "b:x": b}[first].stop()
	other := map[string]string{"a:x": "b:x", "b:x": "a:x"}[first]
	for range 3 {
		if got := askTCP(t, l1, "x"); got != other {
			t.Fatalf("with the session's endpoint refusing: %q; want %q", got, other)
		}
	}
}

// UDP: each new flow of a client address goes to its session's endpoint.
func TestUDPClientIPAffinity(t *testing.T) {
	a, b := udpBackend(t, "a"), udpBackend(t, "b")
	p := newProxy(t, Limits{})
	withClock(p)
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a, b), Affinity: time.Minute, AffinityGroup: "g"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // four flows: four source ports of 127.0.0.1
		if got := askUDPOnce(t, listen, "q"); got != "a:q" {
			t.Fatalf("flow %d: %q; want a's answer (the session's)", i, got)
		}
	}
}

// sessionCount is the number of sessions of group; -1 without a table.
func sessionCount(p *Proxy, group string) int {
	p.mu.Lock()
	s := p.sessions[group]
	p.mu.Unlock()
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byClient)
}

// askUDPOnce sends one datagram from a new socket and returns the answer.
func askUDPOnce(t *testing.T, addr netip.AddrPort, msg string) string {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1500)
	for range 10 { // a datagram may be lost; ask again
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(buf); err == nil {
			return string(buf[:n])
		}
	}
	t.Fatalf("no answer from %s", addr)
	return ""
}
