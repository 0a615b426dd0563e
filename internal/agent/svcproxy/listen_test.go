package svcproxy

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// A redirected rule listens on its address at a port of the kernel's,
// never on its own port: a wildcard bind of that port by another program
// succeeds, and the listener Bound reports serves.
func TestRedirectedRulesLeaveTheirPortFree(t *testing.T) {
	tb, ub := tcpBackend(t, "t"), udpBackend(t, "u")
	p := newProxy(t, Limits{})
	listen := freePort(t, "TCP")
	rules := []Rule{
		{Name: "ns/web:http (ClusterIP)", Protocol: "TCP", Listen: listen, Backends: addrs(tb), Redirected: true},
		{Name: "ns/web:dns (ClusterIP)", Protocol: "UDP", Listen: listen, Backends: addrs(ub), Redirected: true},
		{Name: "ns/web:http (NodePort)", Protocol: "TCP", Listen: freePort(t, "TCP"), Backends: addrs(tb)},
	}
	if err := p.Update(rules); err != nil {
		t.Fatal(err)
	}
	wildcard := netip.AddrPortFrom(netip.IPv4Unspecified(), listen.Port())
	l, err := net.Listen("tcp4", wildcard.String())
	if err != nil {
		t.Fatalf("a host bind of %s: %v", wildcard, err)
	}
	l.Close()
	u, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(wildcard))
	if err != nil {
		t.Fatalf("a host bind of udp %s: %v", wildcard, err)
	}
	u.Close()

	bound := p.Bound()
	if len(bound) != 2 || bound[0].Protocol != "TCP" || bound[1].Protocol != "UDP" {
		t.Fatalf("Bound: %+v; want the two redirected rules", bound)
	}
	for _, b := range bound {
		if b.Listen != listen || b.Addr.Addr() != listen.Addr() || b.Addr.Port() == 0 || b.Addr.Port() == listen.Port() {
			t.Errorf("Bound %+v; want %s's address at another port", b, listen)
		}
	}
	if got := askTCP(t, bound[0].Addr, "hi"); got != "t:hi" {
		t.Errorf("TCP through %s: %q", bound[0].Addr, got)
	}
	if got := askUDPOnce(t, bound[1].Addr, "hi"); got != "u:hi" {
		t.Errorf("UDP through %s: %q", bound[1].Addr, got)
	}
}

// A redirected rule's listener serves only the clients AllowClients
// accepts: another's TCP connection is closed without an answer, its
// datagram dropped; a rule not redirected (a NodePort) serves everyone.
func TestRedirectedListenersCheckTheirClients(t *testing.T) {
	tb, ub := tcpBackend(t, "t"), udpBackend(t, "u")
	p := newProxy(t, Limits{})
	var allowed atomic.Bool
	p.AllowClients(func(a netip.Addr) bool { return allowed.Load() && a.Is4() })
	listen, nodePort := freePort(t, "TCP"), freePort(t, "TCP")
	if err := p.Update([]Rule{
		{Name: "ns/web:http (ClusterIP)", Protocol: "TCP", Listen: listen, Backends: addrs(tb), Redirected: true},
		{Name: "ns/web:dns (ClusterIP)", Protocol: "UDP", Listen: listen, Backends: addrs(ub), Redirected: true},
		{Name: "ns/web:http (NodePort)", Protocol: "TCP", Listen: nodePort, Backends: addrs(tb)},
	}); err != nil {
		t.Fatal(err)
	}
	bound := p.Bound()
	if got := askTCP(t, bound[0].Addr, "hi"); got != "" {
		t.Errorf("a refused client over TCP got %q; want the connection closed", got)
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(bound[1].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 100)); err == nil {
		t.Errorf("a refused client over UDP got an answer of %d bytes", n)
	}
	if got := askTCP(t, nodePort, "hi"); got != "t:hi" {
		t.Errorf("the NodePort (not redirected): %q", got)
	}
	allowed.Store(true)
	if got := askTCP(t, bound[0].Addr, "hi"); got != "t:hi" {
		t.Errorf("an allowed client over TCP: %q", got)
	}
	if got := askUDPOnce(t, bound[1].Addr, "hi"); got != "u:hi" {
		t.Errorf("an allowed client over UDP: %q", got)
	}
}
