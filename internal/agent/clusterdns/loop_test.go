package clusterdns

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// rewritingRelay is a forwarding resolver that gives each question a new
// ID, as dnsmasq, systemd-resolved and unbound do: the names loops says
// it forwards to its target (once set), the others it answers itself
// (192.0.2.53). It counts the questions it forwarded, by name.
type rewritingRelay struct {
	addr   string
	target string
	ready  chan struct{} // closed once target is set
	mu     sync.Mutex
	sent   map[string]int
}

// forwardTo sets the relay's target.
func (r *rewritingRelay) forwardTo(target string) {
	r.target = target
	close(r.ready)
}

func newRewritingRelay(t *testing.T, loops func(name string) bool) *rewritingRelay {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	r := &rewritingRelay{addr: pc.LocalAddr().String(), ready: make(chan struct{}), sent: map[string]int{}}
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			m := new(dns.Msg)
			if m.Unpack(buf[:n]) != nil || len(m.Question) != 1 {
				continue
			}
			go r.handle(pc, from, m, loops(m.Question[0].Name))
		}
	}()
	return r
}

func (r *rewritingRelay) handle(pc net.PacketConn, from net.Addr, m *dns.Msg, loop bool) {
	resp := new(dns.Msg).SetReply(m)
	if loop {
		<-r.ready
		r.mu.Lock()
		r.sent[m.Question[0].Name]++
		r.mu.Unlock()
		id := m.Id
		m.Id = dns.Id()
		c := &dns.Client{Net: "udp", Timeout: 10 * time.Second}
		var err error
		if resp, _, err = c.Exchange(m, r.target); err != nil {
			return
		}
		resp.Id = id
	} else {
		rr, _ := dns.NewRR(m.Question[0].Name + " 30 IN A 192.0.2.53")
		resp.Answer = []dns.RR{rr}
	}
	b, _ := resp.Pack()
	_, _ = pc.WriteTo(b, from)
}

// forwarded is how many questions the relay forwarded: of name, or all.
func (r *rewritingRelay) forwarded(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" {
		return r.sent[name]
	}
	n := 0
	for _, c := range r.sent {
		n += c
	}
	return n
}

// logBuffer is a log destination tests read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An upstream that forwards every question back to the cluster DNS with
// a new ID is found by the probe once the server listens: it is never
// asked again, a Warning names it, and a question is answered SERVFAIL
// at once instead of going round until a cap.
func TestServerFindsAnUpstreamThatLoops(t *testing.T) {
	relay := newRewritingRelay(t, func(string) bool { return true })
	var logs logBuffer
	s := NewServer("cluster.local", []string{relay.addr}, slog.New(slog.NewTextHandler(&logs, nil)))
	addr := serveBoth(t, s)
	relay.forwardTo(addr)
	for deadline := time.Now().Add(5 * time.Second); !s.loops(relay.addr); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the looping upstream was not found")
		}
	}
	if !strings.Contains(logs.String(), "loop detected") || !strings.Contains(logs.String(), relay.addr) {
		t.Errorf("no Warning names the looping upstream: %s", logs.String())
	}
	probes := relay.forwarded("")
	start := time.Now()
	resp := query(t, "udp", addr, "one.example.org.", dns.TypeA)
	if resp.Rcode != dns.RcodeServerFailure || time.Since(start) > time.Second {
		t.Errorf("a question with only a looping upstream: %s after %s; want SERVFAIL at once", rcode(resp), time.Since(start))
	}
	if n := relay.forwarded(""); n != probes || probes > probeTries {
		t.Errorf("the relay forwarded %d questions (%d probes); want only the probes, at most %d", n, probes, probeTries)
	}
}

// A loop the probe did not see (an upstream that forwards some names back
// to the cluster DNS with new IDs) costs one forward per question: the
// question that comes back joins the forward it came from. Other
// questions are forwarded meanwhile.
func TestServerLoopCostsOneForward(t *testing.T) {
	relay := newRewritingRelay(t, func(name string) bool { return strings.HasSuffix(name, ".loop.example.") })
	s := NewServerWith("cluster.local", []string{relay.addr}, slog.Default(), Options{MaxForwards: 4})
	s.timeout = time.Second
	addr := serveBoth(t, s)
	relay.forwardTo(addr)
	const looping = "q.loop.example."
	done := make(chan *dns.Msg, 1)
	go func() {
		c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
		resp, _, _ := c.Exchange(new(dns.Msg).SetQuestion(looping, dns.TypeA), addr)
		done <- resp
	}()
	for deadline := time.Now().Add(5 * time.Second); relay.forwarded(looping) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the looping question never reached the relay")
		}
	}
	for i := range 8 {
		if resp := query(t, "udp", addr, fmt.Sprintf("n%d.example.org.", i), dns.TypeA); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 {
			t.Errorf("a question while a loop is out: %s %v; want the upstream's answer", rcode(resp), resp.Answer)
		}
	}
	if resp := <-done; resp == nil || resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("the looping question: %s; want SERVFAIL", rcode(resp))
	}
	if n := relay.forwarded(looping); n != 1 {
		t.Errorf("the looping question went round %d times; want 1", n)
	}
	if s.loops(relay.addr) {
		t.Error("an upstream that answers the probe was taken for a loop")
	}
}

// Identical questions out at once share one forward; each asker gets the
// answer with its own ID.
func TestServerCoalescesIdenticalQuestions(t *testing.T) {
	release := make(chan struct{})
	var asked atomic.Int64
	up := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if strings.HasSuffix(r.Question[0].Name, "."+probeZone) {
			_ = w.WriteMsg(new(dns.Msg).SetRcode(r, dns.RcodeNameError))
			return
		}
		asked.Add(1)
		<-release
		resp := new(dns.Msg).SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 30 IN A 192.0.2.1")
		resp.Answer = []dns.RR{rr}
		_ = w.WriteMsg(resp)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: up}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	s := NewServer("cluster.local", []string{pc.LocalAddr().String()}, slog.Default())
	addr := serve(t, s)
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := new(dns.Msg).SetQuestion("Same.Example.org.", dns.TypeA)
			m.Id = uint16(1000 + i)
			c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
			resp, _, err := c.Exchange(m, addr)
			if err != nil || resp.Id != m.Id || len(resp.Answer) != 1 {
				t.Errorf("asker %d: %v, %v; want the answer with its ID", i, resp, err)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); s.asking.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d questions in forward; want %d", s.asking.Load(), n)
		}
	}
	close(release)
	wg.Wait()
	if got := asked.Load(); got != 1 {
		t.Errorf("the upstream was asked %d times; want 1", got)
	}
}
