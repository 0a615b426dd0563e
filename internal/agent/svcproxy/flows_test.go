package svcproxy

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// udpFrom is a client socket on the source address src.
func udpFrom(t *testing.T, src string, to netip.AddrPort) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(src), 0)), net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// flowOf returns the port's flow of client c (nil: none) and the number
// of flows of the port and of c's address.
func flowOf(p *Proxy, listen netip.AddrPort, c *net.UDPConn) (f *udpFlow, all, ofSource int) {
	ul := p.ports[Rule{Protocol: "UDP", Listen: listen}.key()].l.(*udpListener)
	ul.mu.Lock()
	defer ul.mu.Unlock()
	client := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return ul.flows[client], len(ul.flows), len(ul.bySource[client.Addr()])
}

// flood sends one datagram from each of n sources, either all on src
// with new ports or each on an address of its own (127.1.x.y), and waits
// until the relay has taken them (a datagram read after them answered),
// fifty at a time so that the listener's receive buffer holds them.
func flood(t *testing.T, listen netip.AddrPort, src string, n int) {
	t.Helper()
	marker := udpFrom(t, "127.0.0.9", listen)
	for i := range n {
		from := src
		if from == "" {
			from = fmt.Sprintf("127.1.%d.%d", i/250, i%250+1)
		}
		c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)), net.UDPAddrFromAddrPort(listen))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Write([]byte("spoofed"))
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 || i == n-1 {
			askUDP(t, marker, "after the flood")
		}
	}
}

// assure makes c's flow assured: an exchange, then another one after
// assureAfter on the proxy's clock.
func assure(t *testing.T, clock *fakeClock, c *net.UDPConn) {
	t.Helper()
	askUDP(t, c, "1")
	clock.step(assureAfter)
	askUDP(t, c, "2")
}

// A flood of one-datagram sources, or of one address's ports, churns its
// own flows: an assured client keeps its flow, and a new client still
// gets one.
func TestUDPFloodKeepsTalkingClients(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlows: 8, UDPMaxFlowsPerSource: 3})
	clock := withClock(p)
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	legit := udpFrom(t, "127.0.0.1", listen)
	assure(t, clock, legit)
	mine, _, _ := flowOf(p, listen, legit)
	if !mine.assured {
		t.Fatal("a client that spoke again after an answer and 2s: its flow is not assured")
	}

	flood(t, listen, "", 300) // spoofed sources, one datagram each
	if f, all, _ := flowOf(p, listen, legit); f != mine || all > 8 {
		t.Errorf("after a flood of sources: the client's flow kept %v, %d flows; want kept, at most 8", f == mine, all)
	}
	flood(t, listen, "127.0.0.2", 50) // one address, many ports
	spoofer := udpFrom(t, "127.0.0.2", listen)
	if _, err := spoofer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	askUDP(t, legit, "3")
	f, all, ofSpoofer := flowOf(p, listen, spoofer)
	if f == nil || ofSpoofer != 3 || all > 8 {
		t.Errorf("after one address's flood: its newest flow %v, %d of its flows, %d in all; want its newest, 3, at most 8", f != nil, ofSpoofer, all)
	}
	if f, _, _ := flowOf(p, listen, legit); f != mine {
		t.Error("the talking client lost its flow to one address's flood")
	}
	if got := askUDP(t, udpFrom(t, "127.0.0.3", listen), "new"); got != "a:new" {
		t.Errorf("a new client: %q; want a's answer", got)
	}
}

// A full table of assured flows ends the least recently active flow, of
// whichever address; a new flow is not the next victim for being new.
func TestUDPFullOfAssuredFlowsEndsTheLeastRecentlyActive(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlows: 4, UDPMaxFlowsPerSource: 3})
	clock := withClock(p)
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	c := []*net.UDPConn{udpFrom(t, "127.0.0.4", listen), udpFrom(t, "127.0.0.4", listen),
		udpFrom(t, "127.0.0.5", listen), udpFrom(t, "127.0.0.6", listen)}
	for _, cc := range c {
		assure(t, clock, cc)
	}
	askUDP(t, c[0], "again") // c[1] is now the least recently active
	askUDP(t, c[2], "again")
	askUDP(t, c[3], "again")
	kept := map[int]*udpFlow{}
	for i, cc := range c {
		kept[i], _, _ = flowOf(p, listen, cc)
	}
	newer := udpFrom(t, "127.0.0.7", listen)
	if got := askUDP(t, newer, "new"); got != "a:new" {
		t.Errorf("a new client: %q; want a's answer", got)
	}
	if f, _, _ := flowOf(p, listen, c[1]); f != nil {
		t.Error("the least recently active flow is still there")
	}
	askUDP(t, c[0], "again")
	askUDP(t, c[2], "again")
	askUDP(t, newer, "again")
	if got := askUDP(t, udpFrom(t, "127.0.0.8", listen), "newest"); got != "a:newest" {
		t.Errorf("another new client: %q; want a's answer", got)
	}
	if f, _, _ := flowOf(p, listen, newer); f == nil {
		t.Error("a new, talking client's flow was ended by the next new flow")
	}
	for _, i := range []int{0, 2} {
		if f, _, _ := flowOf(p, listen, c[i]); f != kept[i] {
			t.Errorf("client %d, talking, lost its flow", i)
		}
	}
}

// spoof sends two datagrams from each of n addresses of its own
// (127.1.x.y), as a spoofer of them would; the second after the answer
// to the first came (to the spoofed address, which a spoofer does not
// see) and after wait on the proxy's clock. After each source, every
// talker speaks. It returns how many times a talker lost its flow.
func spoof(t *testing.T, p *Proxy, clock *fakeClock, listen netip.AddrPort, n int, wait time.Duration, talkers ...*net.UDPConn) int {
	t.Helper()
	flows := map[*net.UDPConn]*udpFlow{}
	for _, c := range talkers {
		flows[c], _, _ = flowOf(p, listen, c)
	}
	lost := 0
	for i := range n {
		c := udpFrom(t, fmt.Sprintf("127.1.%d.%d", i/250, i%250+1), listen)
		askUDP(t, c, "x")
		clock.step(wait)
		askUDP(t, c, "y")
		c.Close()
		for _, c := range talkers {
			askUDP(t, c, "keepalive")
			if f, _, _ := flowOf(p, listen, c); f != flows[c] {
				lost++
				flows[c] = f
			}
		}
	}
	return lost
}

// Spoofed sources that send two datagrams each, back to back, never make
// a flow assured, and those that wait between them make the table assured
// flows that talking clients outlast: a talking client keeps its flow
// either way, and so does a new one.
func TestUDPSpoofedPairsKeepTalkingClients(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlows: 8, UDPMaxFlowsPerSource: 3})
	clock := withClock(p)
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	legit := udpFrom(t, "127.0.0.1", listen)
	askUDP(t, legit, "1")
	askUDP(t, legit, "2") // not assured: only 0s after its first
	if lost := spoof(t, p, clock, listen, 200, 0, legit); lost > 0 {
		t.Errorf("back-to-back pairs: the talking client lost its flow %d times", lost)
	}
	ul := p.ports[Rule{Protocol: "UDP", Listen: listen}.key()].l.(*udpListener)
	ul.mu.Lock()
	assured := ul.assured.Len()
	ul.mu.Unlock()
	if assured != 0 {
		t.Errorf("%d flows assured by back-to-back pairs; want none", assured)
	}
	if lost := spoof(t, p, clock, listen, 100, assureAfter, legit); lost > 0 {
		t.Errorf("pairs %s apart: the talking client lost its flow %d times", assureAfter, lost)
	}
	newer := udpFrom(t, "127.0.0.2", listen)
	askUDP(t, newer, "hello")
	if lost := spoof(t, p, clock, listen, 100, assureAfter, legit, newer); lost > 0 {
		t.Errorf("pairs %s apart: talking clients, one new, lost their flows %d times", assureAfter, lost)
	}
}

// UDP flows count against MaxConns with the TCP connections: at the
// total, a port with flows ends its least recently active one for a new
// one, a port without any drops the datagram, and a TCP connection is
// reset.
func TestUDPFlowsCountAgainstTheTotal(t *testing.T) {
	a := udpBackend(t, "a")
	echo := echoBackend(t)
	p := newProxy(t, Limits{MaxConns: 3})
	one, two, tcp := freePort(t, "UDP"), freePort(t, "UDP"), freePort(t, "TCP")
	if err := p.Update([]Rule{
		{Name: "one", Protocol: "UDP", Listen: one, Backends: addrs(a)},
		{Name: "two", Protocol: "UDP", Listen: two, Backends: addrs(a)},
		{Name: "tcp", Protocol: "TCP", Listen: tcp, Backends: []netip.AddrPort{echo}},
	}); err != nil {
		t.Fatal(err)
	}
	var c []*net.UDPConn
	for range 3 {
		c = append(c, udpFrom(t, "127.0.0.1", one))
		askUDP(t, c[len(c)-1], "hi")
	}
	if _, ok := dialEcho(t, tcp); ok {
		t.Error("a TCP connection was proxied while UDP flows held the total")
	}
	other := udpFrom(t, "127.0.0.1", two)
	if _, err := other.Write([]byte("dropped")); err != nil {
		t.Fatal(err)
	}
	pt := p.ports[Rule{Protocol: "UDP", Listen: two}.key()]
	for deadline := time.Now().Add(5 * time.Second); pt.refused.Load() == 0 && pt.warned.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a new flow on a port without flows was not dropped at the total")
		}
	}
	askUDP(t, c[1], "again")
	askUDP(t, c[2], "again")
	if got := askUDP(t, udpFrom(t, "127.0.0.1", one), "new"); got != "a:new" {
		t.Errorf("a new flow on a port with flows: %q; want a's answer", got)
	}
	if f, _, _ := flowOf(p, one, c[0]); f != nil {
		t.Error("the port's least recently active flow is still there")
	}
	if n, _ := p.conns.held(""); n != 3 {
		t.Errorf("%d held in all; want 3", n)
	}
}

// An idle flow holds no buffer of the endpoint's datagrams.
func TestUDPIdleFlowsHoldNoBuffer(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlowsPerSource: 1024})
	port := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: port, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	askUDP(t, udpFrom(t, "127.0.0.1", port), "warm")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 200
	for range n {
		askUDP(t, udpFrom(t, "127.0.0.1", port), "hi")
	}
	if _, all, _ := flowOf(p, port, udpFrom(t, "127.0.0.1", port)); all != n+1 {
		t.Fatalf("%d flows; want %d", all, n+1)
	}
	runtime.GC()
	runtime.GC() // a sync.Pool keeps its buffers for one more
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > n*16<<10 {
		t.Errorf("%d idle flows hold %d KiB of heap; want under 16 KiB each (a 64 KiB buffer each before)", n, grew>>10)
	}
}
