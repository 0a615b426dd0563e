package clusterdns

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// probeZone holds the names of loop probes: outside the cluster's zone,
// so that an upstream that forwards only that zone to the cluster DNS (a
// stub zone) is not taken for a loop.
const probeZone = "berth-loop-probe."

// probeTries bounds the probes of one upstream that get no answer (it is
// down, or slow to start); one answer ends them.
const probeTries = 5

// loop finds the upstream servers that forward the cluster DNS's
// questions back to it, as CoreDNS's loop plugin does: once the server
// listens, it asks each upstream a question no one else asks
// (HINFO <random>.<random>.berth-loop-probe.); an upstream whose probe
// comes back to the server loops, through resolvers that keep the ID or
// not, and is never asked again while the server runs (a Warning names
// it). A loop that forms
// later costs one forward per question (forward.go).
type loop struct {
	mu      sync.Mutex
	probes  map[string]string // probe name → the upstream it went to
	looping map[string]bool   // upstream servers found to loop
}

// probeLoops probes each upstream that is not the server's own, at once,
// until ctx ends or each has answered or looped.
func (s *Server) probeLoops(ctx context.Context) {
	for _, up := range s.upstream {
		if !s.own(up) {
			go s.probe(ctx, up)
		}
	}
}

// probe asks up the probe question until it answers, it loops, ctx ends
// or probeTries questions went unanswered, a second apart.
func (s *Server) probe(ctx context.Context, up string) {
	// Unguessable (crypto/rand): a client that sent the name would make
	// the server stop asking the upstream.
	r := strings.ToLower(rand.Text())
	name := fmt.Sprintf("%s.%s.%s", r[:13], r[13:], probeZone)
	s.loop.mu.Lock()
	if s.loop.probes == nil {
		s.loop.probes, s.loop.looping = map[string]string{}, map[string]bool{}
	}
	s.loop.probes[name] = up
	s.loop.mu.Unlock()
	defer func() {
		s.loop.mu.Lock()
		delete(s.loop.probes, name)
		s.loop.mu.Unlock()
	}()
	c := &dns.Client{Net: "udp", Timeout: s.timeout}
	for range probeTries {
		_, _, err := c.ExchangeContext(ctx, new(dns.Msg).SetQuestion(name, dns.TypeHINFO), up)
		if err == nil || s.loops(up) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// probed reports whether req is a probe of the server's, and the
// upstream it went to.
func (s *Server) probed(req *dns.Msg) (string, bool) {
	if len(req.Question) != 1 || !strings.HasSuffix(strings.ToLower(req.Question[0].Name), "."+probeZone) {
		return "", false
	}
	s.loop.mu.Lock()
	defer s.loop.mu.Unlock()
	up, ok := s.loop.probes[strings.ToLower(req.Question[0].Name)]
	return up, ok
}

// looped records that up loops, warning once.
func (s *Server) looped(up string, req *dns.Msg) {
	s.loop.mu.Lock()
	known := s.loop.looping[up]
	s.loop.looping[up] = true
	s.loop.mu.Unlock()
	if !known {
		s.log.Warn("cluster DNS: loop detected: the upstream server forwards the cluster DNS's questions back to it; it is never asked",
			"upstream", up, "probe", req.Question[0].String())
	}
}

// loops reports whether up was found to loop.
func (s *Server) loops(up string) bool {
	s.loop.mu.Lock()
	defer s.loop.mu.Unlock()
	return s.loop.looping[up]
}
