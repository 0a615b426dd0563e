package svcproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// echoBackend echoes every connection's bytes until the client's end;
// then it writes "bye" and closes.
func echoBackend(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				// Through a buffer: io.Copy's splice(2) would hold a pipe.
				_, _ = io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
				_, _ = io.WriteString(c, "bye")
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// dialEcho connects to addr and reports whether a line comes back, i.e.
// whether the proxy took the connection.
func dialEcho(t *testing.T, addr netip.AddrPort) (*net.TCPConn, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil { // a reset may come before the connect is seen done
		t.Logf("dial %s: %v", addr, err)
		return nil, false
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return c.(*net.TCPConn), false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	_ = c.SetDeadline(time.Time{})
	return c.(*net.TCPConn), err == nil && line == "ping\n"
}

// waitHeld waits until the proxy holds total connections.
func waitHeld(t *testing.T, p *Proxy, total int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := p.conns.held("")
		if n == total {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d connections; want %d", n, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A connection over the total or its Service's limit is reset at once;
// one that ends frees its place.
func TestTCPConnectionLimits(t *testing.T) {
	echo := echoBackend(t)
	p := newProxy(t, Limits{MaxConns: 3, MaxConnsPerService: 2})
	a1, a2, b := freePort(t, "TCP"), freePort(t, "TCP"), freePort(t, "TCP")
	err := p.Update([]Rule{
		{Name: "ns/a:one", Service: "ns/a", Protocol: "TCP", Listen: a1, Backends: []netip.AddrPort{echo}},
		{Name: "ns/a:two", Service: "ns/a", Protocol: "TCP", Listen: a2, Backends: []netip.AddrPort{echo}},
		{Name: "ns/b:one", Service: "ns/b", Protocol: "TCP", Listen: b, Backends: []netip.AddrPort{echo}},
	})
	if err != nil {
		t.Fatal(err)
	}
	first, ok1 := dialEcho(t, a1)
	_, ok2 := dialEcho(t, a2)
	if !ok1 || !ok2 {
		t.Fatalf("the Service's first two connections proxied: %v %v; want both", ok1, ok2)
	}
	if _, ok := dialEcho(t, a1); ok {
		t.Error("a third connection of ns/a was proxied; want it reset (2 per Service)")
	}
	if _, ok := dialEcho(t, b); !ok {
		t.Error("ns/b's first connection was not proxied")
	}
	if _, ok := dialEcho(t, b); ok {
		t.Error("a fourth connection was proxied; want it reset (3 in all)")
	}
	waitHeld(t, p, 3)
	first.Close()
	waitHeld(t, p, 2)
	if _, ok := dialEcho(t, a2); !ok {
		t.Error("after one ended, ns/a's new connection was not proxied")
	}
	if _, n := p.conns.held("ns/a"); n != 2 {
		t.Errorf("ns/a holds %d connections; want 2", n)
	}
}

// A proxied connection without a byte either way for TCPIdle is closed;
// one that talks is not. A half close is passed on and the other way
// goes on.
func TestTCPIdleTimeoutAndHalfClose(t *testing.T) {
	echo := echoBackend(t)
	const idle = 300 * time.Millisecond
	p := newProxy(t, Limits{TCPIdle: idle})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen, Backends: []netip.AddrPort{echo}}}); err != nil {
		t.Fatal(err)
	}
	talker, ok := dialEcho(t, listen)
	quiet, ok2 := dialEcho(t, listen)
	if !ok || !ok2 {
		t.Fatal("not proxied")
	}
	// The talker sends every idle/3 for 3 idle times: it stays open.
	r := bufio.NewReader(talker)
	for start := time.Now(); time.Since(start) < 3*idle; time.Sleep(idle / 3) {
		_ = talker.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(talker, "x\n"); err != nil {
			t.Fatalf("the talking connection was closed: %v", err)
		}
		if line, err := r.ReadString('\n'); err != nil || line != "x\n" {
			t.Fatalf("the talking connection: %q, %v", line, err)
		}
	}
	// The quiet one was closed after idle (it reads its end, or a reset).
	_ = quiet.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := quiet.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the idle connection: read %d, %v; want it closed", n, err)
	}
	// Half close: the client's end reaches the endpoint, whose answer
	// after it still comes back.
	if err := talker.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = talker.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "bye" {
		t.Errorf("after the half close: %q, %v; want the endpoint's bye", rest, err)
	}
	waitHeld(t, p, 0)
}

// A half-closed connection whose other way stays silent is closed after
// the idle time too.
func TestTCPIdleAfterHalfClose(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // accepts and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	p := newProxy(t, Limits{TCPIdle: 200 * time.Millisecond})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen,
		Backends: []netip.AddrPort{l.Addr().(*net.TCPAddr).AddrPort()}}}); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitHeld(t, p, 1)
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, p, 0)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// An idle proxied connection holds the proxy's two sockets and nothing
// else (io.Copy's splice(2) would hold a pipe per direction too).
func TestTCPConnectionHoldsTwoDescriptors(t *testing.T) {
	echo := echoBackend(t)
	p := newProxy(t, Limits{})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen, Backends: []netip.AddrPort{echo}}}); err != nil {
		t.Fatal(err)
	}
	dialEcho(t, listen) // the first connection's one-off costs (poller) are paid
	before := openFDs(t)
	const n = 50
	for range n {
		if _, ok := dialEcho(t, listen); !ok {
			t.Fatal("not proxied")
		}
	}
	waitHeld(t, p, n+1)
	// Each connection: the test's socket, the proxy's two, the echo's.
	if got := openFDs(t) - before; got > 4*n+4 {
		t.Errorf("%d connections opened %d descriptors; want at most %d (4 each, 2 of them the proxy's)", n, got, 4*n)
	}
}

// dialEchoFrom is dialEcho from the source address src.
func dialEchoFrom(t *testing.T, src string, addr netip.AddrPort) bool {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		return false
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	_ = c.SetDeadline(time.Time{})
	return err == nil && line == "ping\n"
}

// One client address holds at most MaxConnsPerSource connections of a
// Service: another address, or another Service, still gets in.
func TestTCPPerSourceLimit(t *testing.T) {
	echo := echoBackend(t)
	p := newProxy(t, Limits{MaxConnsPerService: 4, MaxConnsPerSource: 2})
	a, b := freePort(t, "TCP"), freePort(t, "TCP")
	if err := p.Update([]Rule{
		{Name: "ns/a:one", Service: "ns/a", Protocol: "TCP", Listen: a, Backends: []netip.AddrPort{echo}},
		{Name: "ns/b:one", Service: "ns/b", Protocol: "TCP", Listen: b, Backends: []netip.AddrPort{echo}},
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if !dialEchoFrom(t, "127.0.0.1", a) {
			t.Fatalf("connection %d of 127.0.0.1 was not proxied", i+1)
		}
	}
	if dialEchoFrom(t, "127.0.0.1", a) {
		t.Error("a third connection of 127.0.0.1 to ns/a was proxied; want it reset (2 per source)")
	}
	if !dialEchoFrom(t, "127.0.0.2", a) {
		t.Error("another address's connection to ns/a was not proxied")
	}
	if !dialEchoFrom(t, "127.0.0.1", b) {
		t.Error("127.0.0.1's connection to another Service was not proxied")
	}
	if got := New(nil, Limits{MaxConnsPerService: 64}).limits.MaxConnsPerSource; got != 64 {
		t.Errorf("per-source limit with 64 per Service: %d; want 64 (at most the per-Service)", got)
	}
}

// A connection on which no byte goes either way is closed after
// TCPFirstByte; one that talked keeps TCPIdle.
func TestTCPFirstByteTimeout(t *testing.T) {
	echo := echoBackend(t)
	p := newProxy(t, Limits{TCPFirstByte: 300 * time.Millisecond})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen, Backends: []netip.AddrPort{echo}}}); err != nil {
		t.Fatal(err)
	}
	talker, ok := dialEcho(t, listen)
	if !ok {
		t.Fatal("not proxied")
	}
	silent, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waitHeld(t, p, 2)
	waitHeld(t, p, 1) // the silent one, made after the talker, is closed
	_ = talker.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(talker, "again\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(talker).ReadString('\n'); err != nil || line != "again\n" {
		t.Errorf("the connection that talked: %q, %v; want it kept", line, err)
	}
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); err == nil {
		t.Errorf("the silent connection read %d bytes; want it closed", n)
	}
}

// A half-closed connection is closed after TCPHalfClosed without a byte,
// not TCPIdle.
func TestTCPHalfClosedTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // reads, never answers nor closes
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	p := newProxy(t, Limits{TCPHalfClosed: 300 * time.Millisecond})
	listen := freePort(t, "TCP")
	if err := p.Update([]Rule{{Name: "r", Protocol: "TCP", Listen: listen,
		Backends: []netip.AddrPort{l.Addr().(*net.TCPAddr).AddrPort()}}}); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "request"); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, p, 0)
}
