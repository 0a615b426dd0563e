package svcproxy

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
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
// until the relay has taken them (a datagram read after them answered).
func flood(t *testing.T, listen netip.AddrPort, src string, n int) {
	t.Helper()
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
	}
	askUDP(t, udpFrom(t, "127.0.0.9", listen), "after the flood")
}

// A flood of one-datagram sources, or of one address's ports, churns its
// own flows: a client in an exchange keeps its flow, and a new client
// still gets one.
func TestUDPFloodKeepsTalkingClients(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlows: 8, UDPMaxFlowsPerSource: 3})
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	legit := udpFrom(t, "127.0.0.1", listen)
	askUDP(t, legit, "1")
	askUDP(t, legit, "2") // after an answer: its flow is assured
	mine, _, _ := flowOf(p, listen, legit)

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

// A full table of assured flows ends the oldest flow of the address
// holding the most, not another client's.
func TestUDPFullOfAssuredFlowsEndsTheBusiestSources(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPMaxFlows: 4, UDPMaxFlowsPerSource: 3})
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	var busy []*net.UDPConn
	for range 3 {
		c := udpFrom(t, "127.0.0.4", listen)
		askUDP(t, c, "1")
		askUDP(t, c, "2")
		busy = append(busy, c)
	}
	other := udpFrom(t, "127.0.0.5", listen)
	askUDP(t, other, "1")
	askUDP(t, other, "2")
	theirs, _, _ := flowOf(p, listen, other)
	if got := askUDP(t, udpFrom(t, "127.0.0.6", listen), "new"); got != "a:new" {
		t.Errorf("a new client: %q; want a's answer", got)
	}
	if f, _, _ := flowOf(p, listen, busy[0]); f != nil {
		t.Error("the busiest address's oldest flow is still there")
	}
	if f, all, _ := flowOf(p, listen, other); f != theirs || all != 4 {
		t.Errorf("the other client's flow kept %v, %d flows; want kept, 4", f == theirs, all)
	}
}
