package clusterdns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// relay forwards every datagram it gets to target and the answer back, as
// a forwarding resolver that keeps the question's ID would.
func relay(t *testing.T, target string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			msg := append([]byte(nil), buf[:n]...)
			go func() {
				c, err := net.Dial("udp", target)
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write(msg); err != nil {
					return
				}
				answer := make([]byte, 65535)
				if n, err := c.Read(answer); err == nil {
					_, _ = pc.WriteTo(answer[:n], from)
				}
			}()
		}
	}()
	return pc.LocalAddr().String()
}

// An upstream that forwards back to the server: the question that comes
// back is answered SERVFAIL at once, which ends the loop; the goroutines
// stay few.
func TestServerLoopIsAnsweredServfail(t *testing.T) {
	// The relay must know the server's address before the server serves:
	// a port free for UDP may be taken for TCP meanwhile, so try another.
	var addr string
	for try := 0; addr == ""; try++ {
		if try == 10 {
			t.Fatal("no port free for UDP and TCP")
		}
		a := fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t))
		s := NewServer("cluster.local", []string{relay(t, a)}, slog.Default())
		s.timeout = 10 * time.Second // an answer in time comes from the loop's detection
		if err := tryServeOn(t, s, a); err != nil {
			t.Logf("%s: %v; another port", a, err)
			continue
		}
		addr = a
	}
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			start := time.Now()
			c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
			resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(fmt.Sprintf("n%d.example.org.", i), dns.TypeA), addr)
			if err != nil || resp.Rcode != dns.RcodeServerFailure || time.Since(start) > time.Second {
				t.Errorf("a looping question: %v, %v after %s; want SERVFAIL within 1s", rcode(resp), err, time.Since(start))
			}
		})
	}
	wg.Wait()
	if n := runtime.NumGoroutine(); n > before+100 {
		t.Errorf("%d goroutines after the loop, %d before", n, before)
	}
}

func rcode(m *dns.Msg) string {
	if m == nil {
		return "no answer"
	}
	return dns.RcodeToString[m.Rcode]
}

// The server's own addresses are never asked: Options.Own (the Service
// range) and where it listens.
func TestServerNeverAsksItself(t *testing.T) {
	up := NewServer("example.com", nil, slog.Default())
	up.Update(NewTable("example.com", []Service{{Namespace: "ns", Name: "up", Endpoints: []Endpoint{{Addr: netip.MustParseAddr("192.0.2.1")}}}}, nil))
	upAddr := serveBoth(t, up)
	s := NewServerWith("cluster.local", []string{upAddr}, slog.Default(), Options{Own: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	addr := serve(t, s)
	if resp := query(t, "udp", addr, "up.ns.svc.example.com.", dns.TypeA); resp.Rcode != dns.RcodeServerFailure || len(resp.Answer) > 0 {
		t.Errorf("an upstream among Own: %s %v; want SERVFAIL, never asked", rcode(resp), resp.Answer)
	}
	plain := NewServer("cluster.local", nil, slog.Default())
	if plain.own(addr) {
		t.Errorf("a server not listening: %s counted as its own", addr)
	}
	addr = serve(t, plain)
	port := netip.MustParseAddrPort(addr).Port()
	for _, c := range []struct {
		up  string
		own bool
	}{{addr, true}, {fmt.Sprintf("127.0.0.1:%d", port+1), false}, {fmt.Sprintf("127.0.0.2:%d", port), false}} {
		if got := plain.own(c.up); got != c.own {
			t.Errorf("own(%s) = %v; want %v", c.up, got, c.own)
		}
	}
	wild := NewServer("cluster.local", nil, slog.Default())
	wild.listening(&net.UDPAddr{IP: net.IPv4zero, Port: 5353})
	for up, want := range map[string]bool{"127.0.0.53:5353": true, "127.0.0.53:53": false, "192.0.2.7:5353": false} {
		if got := wild.own(up); got != want {
			t.Errorf("listening on 0.0.0.0:5353: own(%s) = %v; want %v", up, got, want)
		}
	}
}

// At most MaxForwards questions are out at once; one beyond is REFUSED.
func TestServerBoundsForwards(t *testing.T) {
	dead, err := net.ListenPacket("udp", "127.0.0.1:0") // never answers
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	s := NewServerWith("cluster.local", []string{dead.LocalAddr().String()}, slog.Default(), Options{MaxForwards: 2})
	s.timeout = time.Second
	addr := serve(t, s)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
			resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(fmt.Sprintf("slow%d.example.org.", i), dns.TypeA), addr)
			if err != nil || resp.Rcode != dns.RcodeServerFailure {
				t.Errorf("a question the upstream never answers: %s, %v; want SERVFAIL", rcode(resp), err)
			}
		})
	}
	defer wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); len(s.forwards) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d questions out; want 2", len(s.forwards))
		}
	}
	if resp := query(t, "udp", addr, "third.example.org.", dns.TypeA); resp.Rcode != dns.RcodeRefused {
		t.Errorf("a third question: %s; want REFUSED", rcode(resp))
	}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// tryServeOn serves s on addr until the test ends, or returns why it
// could not listen.
func tryServeOn(t *testing.T, s *Server, addr string) error {
	t.Helper()
	ready := make(chan struct{})
	done := make(chan error, 1)
	ctx, stop := context.WithCancel(context.Background())
	go func() { done <- s.ListenAndServe(ctx, addr, func(net.Addr, net.Addr) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		stop()
		return err
	}
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe after stop: %v", err)
		}
	})
	return nil
}
