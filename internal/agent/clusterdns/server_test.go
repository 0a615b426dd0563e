package clusterdns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// serve starts s on an ephemeral loopback port and stops it with the test.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.ListenAndServe(ctx, "127.0.0.1:0", func(udp, _ net.Addr) { addrs <- udp.String() })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe after stop: %v", err)
		}
	})
	return addr
}

// The UDP and TCP sockets share the port only by chance; serve the same
// port on both by asking for it explicitly.
func serveBoth(t *testing.T, s *Server) string {
	t.Helper()
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- s.ListenAndServe(ctx, addr, func(net.Addr, net.Addr) { close(ready) }) }()
		select {
		case <-ready:
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("ListenAndServe after stop: %v", err)
				}
			})
			return addr
		case err := <-done:
			t.Logf("%s: %v; another port", addr, err) // taken meanwhile
			cancel()
		}
	}
	t.Fatal("no free port for UDP and TCP")
	return ""
}

func query(t *testing.T, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, qtype), addr)
	if err != nil {
		t.Fatalf("%s query %s: %v", network, name, err)
	}
	return resp
}

func TestServerAnswersItsZone(t *testing.T) {
	s := NewServer("cluster.local", nil, slog.Default())
	s.Update(testTable())
	addr := serve(t, s)
	resp := query(t, "udp", addr, "web.default.svc.cluster.local.", dns.TypeA)
	if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative || values(resp.Answer) != "10.88.0.5,10.88.0.6" {
		t.Errorf("service: rcode %s aa %v answer %q", dns.RcodeToString[resp.Rcode], resp.Authoritative, values(resp.Answer))
	}
	resp = query(t, "udp", addr, "nope.default.svc.cluster.local.", dns.TypeA)
	if resp.Rcode != dns.RcodeNameError || len(resp.Ns) != 1 || resp.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("unknown name: rcode %s authority %v; want NXDOMAIN with the SOA", dns.RcodeToString[resp.Rcode], resp.Ns)
	}
	resp = query(t, "udp", addr, "idle.default.svc.cluster.local.", dns.TypeA)
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 || len(resp.Ns) != 1 {
		t.Errorf("service without endpoints: rcode %s answer %v; want NOERROR, no data, the SOA", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	// Outside the zone with no upstream: refused, never answered as ours.
	if resp = query(t, "udp", addr, "example.com.", dns.TypeA); resp.Rcode != dns.RcodeRefused {
		t.Errorf("outside the zone without upstream: %s; want REFUSED", dns.RcodeToString[resp.Rcode])
	}
}

// An Update is seen by the next query: an endpoint that stops being ready
// is gone from the answer.
func TestServerUpdate(t *testing.T) {
	s := NewServer("cluster.local", nil, slog.Default())
	addr := serve(t, s)
	if resp := query(t, "udp", addr, "web.default.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Fatalf("before any Update: %s; want NXDOMAIN", dns.RcodeToString[resp.Rcode])
	}
	s.Update(testTable())
	s.Update(NewTable("cluster.local", []Service{{Namespace: "default", Name: "web", Endpoints: []Endpoint{{Addr: netip.MustParseAddr("10.88.0.6")}}}}, nil))
	if resp := query(t, "udp", addr, "web.default.svc.cluster.local.", dns.TypeA); values(resp.Answer) != "10.88.0.6" {
		t.Errorf("after the update: %q; want the one ready endpoint", values(resp.Answer))
	}
}

// Names outside the zone go to the upstream servers; one that does not
// answer is skipped.
func TestServerForwards(t *testing.T) {
	up := NewServer("example.com", nil, slog.Default())
	up.Update(NewTable("example.com", []Service{{Namespace: "ns", Name: "up", Endpoints: []Endpoint{{Addr: netip.MustParseAddr("192.0.2.1")}}}}, nil))
	upAddr := serveBoth(t, up)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0") // never answers
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	s := NewServer("cluster.local", []string{dead.LocalAddr().String(), upAddr}, slog.Default())
	s.timeout = 200e6
	addr := serveBoth(t, s)
	for _, network := range []string{"udp", "tcp"} {
		resp := query(t, network, addr, "up.ns.svc.example.com.", dns.TypeA)
		if values(resp.Answer) != "192.0.2.1" {
			t.Errorf("%s forwarded: rcode %s answer %q", network, dns.RcodeToString[resp.Rcode], values(resp.Answer))
		}
	}
}

// A UDP answer larger than the client's buffer is truncated with TC set;
// over TCP the client gets all of it.
func TestServerTruncatesUDP(t *testing.T) {
	var eps []Endpoint
	for i := range 100 {
		eps = append(eps, Endpoint{Addr: netip.MustParseAddr(fmt.Sprintf("10.88.1.%d", i+1))})
	}
	s := NewServer("cluster.local", nil, slog.Default())
	s.Update(NewTable("cluster.local", []Service{{Namespace: "default", Name: "big", Endpoints: eps}}, nil))
	addr := serveBoth(t, s)
	resp := query(t, "udp", addr, "big.default.svc.cluster.local.", dns.TypeA)
	if !resp.Truncated || len(resp.Answer) >= 100 {
		t.Errorf("udp: truncated %v with %d records; want TC and fewer than 100", resp.Truncated, len(resp.Answer))
	}
	if resp = query(t, "tcp", addr, "big.default.svc.cluster.local.", dns.TypeA); resp.Truncated || len(resp.Answer) != 100 {
		t.Errorf("tcp: truncated %v with %d records; want all 100", resp.Truncated, len(resp.Answer))
	}
}

// A query the server cannot take gets an error code, not silence.
func TestServerOddQueries(t *testing.T) {
	s := NewServer("cluster.local", nil, slog.Default())
	addr := serve(t, s)
	m := new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	m.Question = append(m.Question, m.Question[0])
	resp, _, err := (&dns.Client{}).Exchange(m, addr)
	if err != nil || resp.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: %v %v; want FORMERR", resp, err)
	}
	m = new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	m.Opcode = dns.OpcodeUpdate
	if resp, _, err = (&dns.Client{}).Exchange(m, addr); err != nil || resp.Rcode != dns.RcodeNotImplemented {
		t.Errorf("update opcode: %v %v; want NOTIMP", resp, err)
	}
}
