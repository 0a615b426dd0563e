package svcproxy

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

// backend is a loopback server that answers every connection (TCP) or
// datagram (UDP) with its name.
type backend struct {
	name string
	addr netip.AddrPort
	stop func()
}

func tcpBackend(t *testing.T, name string) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = io.WriteString(c, name+":"+line)
			}()
		}
	}()
	b := &backend{name: name, addr: l.Addr().(*net.TCPAddr).AddrPort(), stop: func() { l.Close() }}
	t.Cleanup(b.stop)
	return b
}

func udpBackend(t *testing.T, name string) *backend {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDPAddrPort(append([]byte(name+":"), buf[:n]...), from)
		}
	}()
	b := &backend{name: name, addr: c.LocalAddr().(*net.UDPAddr).AddrPort(), stop: func() { c.Close() }}
	t.Cleanup(b.stop)
	return b
}

// freePort finds a loopback port free for the protocol now.
func freePort(t *testing.T, protocol string) netip.AddrPort {
	t.Helper()
	if protocol == "UDP" {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

func newProxy(t *testing.T, lim Limits) *Proxy {
	t.Helper()
	p := New(slog.Default(), lim)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// askTCP connects to addr, sends a line and returns the answer ("" when
// the proxy closed the connection without one).
func askTCP(t *testing.T, addr netip.AddrPort, msg string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return ""
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n")
}

func addrs(bs ...*backend) []netip.AddrPort {
	var out []netip.AddrPort
	for _, b := range bs {
		out = append(out, b.addr)
	}
	return out
}

func TestTCPRoundRobinAndUpdates(t *testing.T) {
	a, b := tcpBackend(t, "a"), tcpBackend(t, "b")
	p := newProxy(t, Limits{})
	listen := freePort(t, "TCP")
	rule := Rule{Name: "default/web:http", Protocol: "TCP", Listen: listen, Backends: addrs(a, b)}
	if err := p.Update([]Rule{rule}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, askTCP(t, listen, "hi"))
	}
	if strings.Join(got, ",") != "a:hi,b:hi,a:hi,b:hi" {
		t.Errorf("answers %v; want a and b in turn", got)
	}
	// b no longer ready: every new connection goes to a.
	rule.Backends = addrs(a)
	if err := p.Update([]Rule{rule}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := askTCP(t, listen, "x"); got != "a:x" {
			t.Errorf("after b left: %q; want a's answer", got)
		}
	}
	// No endpoint: the connection is closed without an answer.
	rule.Backends = nil
	if err := p.Update([]Rule{rule}); err != nil {
		t.Fatal(err)
	}
	if got := askTCP(t, listen, "x"); got != "" {
		t.Errorf("without endpoints: %q; want the connection closed", got)
	}
	// The rule gone: the port is closed.
	if err := p.Update(nil); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", listen.String(), time.Second); err == nil {
		c.Close()
		t.Errorf("port %s still accepts after its rule went", listen)
	}
}

// An endpoint that refuses connections is skipped.
func TestTCPSkipsARefusingEndpoint(t *testing.T) {
	a, gone := tcpBackend(t, "a"), tcpBackend(t, "gone")
	gone.stop()
	p := newProxy(t, Limits{})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen, Backends: addrs(gone, a)}}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if got := askTCP(t, listen, "x"); got != "a:x" {
			t.Errorf("%q; want a's answer every time", got)
		}
	}
}

// A port taken by another program is an error naming the rule; the other
// rules still apply.
func TestUpdateReportsATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	a := tcpBackend(t, "a")
	p := newProxy(t, Limits{})
	ok := freePort(t, "TCP")
	err = p.Update([]Rule{
		{Name: "ns/busy:http", Protocol: "TCP", Listen: taken.Addr().(*net.TCPAddr).AddrPort(), Backends: addrs(a)},
		{Name: "ns/ok:http", Protocol: "TCP", Listen: ok, Backends: addrs(a)},
		{Name: "ns/sctp:x", Protocol: "SCTP", Listen: ok, Backends: addrs(a)},
	})
	if err == nil || !strings.Contains(err.Error(), "ns/busy:http") || !strings.Contains(err.Error(), "ns/sctp:x") {
		t.Errorf("error %v; want one naming the busy rule and the SCTP one", err)
	}
	if got := askTCP(t, ok, "x"); got != "a:x" {
		t.Errorf("the other rule: %q; want a's answer", got)
	}
}

func askUDP(t *testing.T, c *net.UDPConn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", msg, err)
	}
	return string(buf[:n])
}

// A UDP client keeps its endpoint while its flow is active; another
// client gets the next endpoint.
func TestUDPFlows(t *testing.T) {
	a, b := udpBackend(t, "a"), udpBackend(t, "b")
	p := newProxy(t, Limits{})
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a, b)}}); err != nil {
		t.Fatal(err)
	}
	first, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	one := askUDP(t, first, "1")
	if again := askUDP(t, first, "2"); again[:2] != one[:2] {
		t.Errorf("the same client moved from %q to %q", one, again)
	}
	if other := askUDP(t, second, "3"); other[:2] == one[:2] {
		t.Errorf("both clients on %q; want the second on the other endpoint", other[:2])
	}
}

// Idle UDP flows end: the proxy holds no socket for a client gone quiet.
func TestUDPFlowsEndWhenIdle(t *testing.T) {
	a := udpBackend(t, "a")
	p := newProxy(t, Limits{UDPIdle: 50 * time.Millisecond})
	listen := freePort(t, "UDP")
	if err := p.Update([]Rule{{Name: "dns", Protocol: "UDP", Listen: listen, Backends: addrs(a)}}); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	askUDP(t, c, "x")
	ul := p.ports[Rule{Protocol: "UDP", Listen: listen}.key()].l.(*udpListener)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ul.mu.Lock()
		n := len(ul.flows)
		ul.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d flows left after the idle time", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flakyListener fails its first Accept calls as a listener out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// An accept that fails (no file descriptor left for a while) does not
// end the port: it keeps accepting once it can, until it is closed.
func TestTCPPortOutlivesAFailedAccept(t *testing.T) {
	a := tcpBackend(t, "a")
	p := newProxy(t, Limits{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pt := &port{rule: Rule{Name: "r", Protocol: "TCP"}}
	pt.setBackends(addrs(a))
	tl := &tcpListener{l: &flakyListener{Listener: l, fails: 3}, done: make(chan struct{})}
	tl.wg.Add(1)
	go func() { defer tl.wg.Done(); p.acceptTCP(pt, tl) }()
	defer func() {
		if err := tl.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if got := askTCP(t, l.Addr().(*net.TCPAddr).AddrPort(), "x"); got != "a:x" {
		t.Errorf("after failed accepts: %q; want a's answer", got)
	}
}
