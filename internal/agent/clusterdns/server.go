package clusterdns

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"
)

// Server answers the zone's names from its current Table and forwards
// every other question to the upstream servers, first answer wins.
type Server struct {
	table    atomic.Pointer[Table]
	upstream []string // host:port
	timeout  time.Duration
	log      *slog.Logger
	guard                          // loops and floods (guard.go)
	allow    func(netip.Addr) bool // nil: every client (clients.go)
	loop                           // upstream servers that forward back (loop.go)
	flights  singleflight.Group    // identical questions forwarded at once (forward.go)
	asking   atomic.Int64          // questions in forward
}

// Options are a server's guards against loops and floods.
type Options struct {
	// Own are the agent's own addresses (the Service range: its
	// ClusterIPs and the DNS address): an upstream among them is never
	// asked, whatever its port.
	Own []netip.Prefix
	// MaxForwards bounds the questions forwarded upstream at once; one
	// beyond is answered REFUSED, as CoreDNS's forward max_concurrent.
	// Default DefaultMaxForwards.
	MaxForwards int
}

// NewServer makes a server for zone with an empty table and the default
// Options. upstream are the host's name servers (host or host:port); with
// none, questions outside the zone are refused.
func NewServer(zone string, upstream []string, log *slog.Logger) *Server {
	return NewServerWith(zone, upstream, log, Options{})
}

// NewServerWith is NewServer with o's guards.
func NewServerWith(zone string, upstream []string, log *slog.Logger, o Options) *Server {
	s := &Server{timeout: 2 * time.Second, log: log}
	for _, u := range upstream {
		if _, _, err := net.SplitHostPort(u); err != nil {
			u = net.JoinHostPort(u, "53")
		}
		s.upstream = append(s.upstream, u)
	}
	s.guard.init(o)
	for _, u := range s.upstream {
		if s.ownStatic(u) {
			log.Warn("cluster DNS: an upstream server is an address of the agent's own (a loop); it is never asked", "upstream", u)
		}
	}
	s.table.Store(NewTable(zone, nil, nil))
	return s
}

// Update replaces the records at once.
func (s *Server) Update(t *Table) { s.table.Store(t) }

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	var resp *dns.Msg
	if refused := s.refused(w, req); refused != nil { // a client neither the host nor a pod of this node (clients.go)
		resp = refused
	} else if up, ok := s.probed(req); ok {
		resp = new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
		s.looped(up, req)
	} else if up, ok := s.cameBack(req); ok {
		resp = new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
		s.warnLoop(up, req)
	} else {
		resp = s.answer(req, w.RemoteAddr().Network())
	}
	if err := w.WriteMsg(resp); err != nil {
		s.log.Debug("dns: writing an answer", "error", err)
	}
}

// answer builds the response to one query.
func (s *Server) answer(req *dns.Msg, network string) *dns.Msg {
	resp := new(dns.Msg)
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		return resp.SetRcode(req, dns.RcodeNotImplemented)
	}
	q := req.Question[0]
	t := s.table.Load()
	if q.Qclass != dns.ClassINET || !t.InZone(q.Name) {
		return s.forward(req, network)
	}
	resp.SetReply(req)
	resp.Authoritative = true
	answer, exists := t.Lookup(q.Name, q.Qtype)
	if len(answer) > 0 {
		answer, resp.Truncated = s.follow(t, req, answer, network)
	}
	switch {
	case !exists:
		resp.Rcode = dns.RcodeNameError
		resp.Ns = []dns.RR{t.SOA()}
	case len(answer) == 0:
		resp.Ns = []dns.RR{t.SOA()}
	default:
		resp.Answer = answer
	}
	return truncateFor(req, resp, network)
}

// truncateFor fits a UDP answer into the client's buffer (512 bytes, or
// its EDNS0 size), setting TC so that it asks again over TCP.
func truncateFor(req, resp *dns.Msg, network string) *dns.Msg {
	if network != "udp" {
		return resp
	}
	size := dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		size = max(size, int(opt.UDPSize()))
	}
	resp.Truncate(size)
	return resp
}

// ListenAndServe serves UDP and TCP on addr (host:port) until ctx ends.
// ready, if not nil, is called once both sockets listen.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(udp, tcp net.Addr)) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		return err
	}
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	udp := &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: notify}
	tcp := &dns.Server{Listener: l, Handler: s, NotifyStartedFunc: notify}
	errs := make(chan error, 2)
	go func() { errs <- udp.ActivateAndServe() }()
	go func() { errs <- tcp.ActivateAndServe() }()
	for range 2 { // Shutdown of a server not started yet would leave it serving
		select {
		case <-started:
		case err := <-errs:
			return errors.Join(err, udp.Shutdown(), tcp.Shutdown())
		}
	}
	s.listening(pc.LocalAddr(), l.Addr())
	go s.probeLoops(ctx)
	if ready != nil {
		ready(pc.LocalAddr(), l.Addr())
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdown := errors.Join(udp.Shutdown(), tcp.Shutdown())
	if err != nil {
		return err
	}
	return shutdown
}
