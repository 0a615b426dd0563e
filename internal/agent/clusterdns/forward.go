package clusterdns

import (
	"errors"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// forward asks the upstream servers in turn; SERVFAIL when none answers,
// REFUSED when too many questions are forwarded already. Identical
// questions out at once (name, type, class, DNSSEC OK and checking
// disabled bits, network) share one forward, as dnsmasq and unbound
// do: each asker gets its answer, with its own ID and question. A loop
// through a resolver that gives each question a new ID thus costs one
// forward: the question that comes back joins the forward it came from
// and ends with it.
func (s *Server) forward(req *dns.Msg, network string) *dns.Msg {
	if len(s.upstream) == 0 {
		return new(dns.Msg).SetRcode(req, dns.RcodeRefused)
	}
	s.asking.Add(1)
	v, err, _ := s.flights.Do(flightOf(req, network), func() (any, error) { return s.exchange(req, network) })
	s.asking.Add(-1)
	resp, _ := v.(*dns.Msg)
	switch {
	case errors.Is(err, errBusy):
		return new(dns.Msg).SetRcode(req, dns.RcodeRefused)
	case resp == nil:
		return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
	}
	resp = resp.Copy() // shared by every asker
	resp.Id = req.Id
	resp.Question = append([]dns.Question(nil), req.Question...)
	return truncateFor(req, resp, network)
}

// flightOf is the key of the questions that share a forward.
func flightOf(req *dns.Msg, network string) string {
	q := req.Question[0]
	do := req.IsEdns0() != nil && req.IsEdns0().Do()
	return strings.Join([]string{network, strings.ToLower(q.Name), strconv.Itoa(int(q.Qtype)),
		strconv.Itoa(int(q.Qclass)), strconv.FormatBool(do), strconv.FormatBool(req.CheckingDisabled)}, " ")
}

// exchange returns the first upstream server's answer to req; nil when
// none answers, with errBusy when MaxForwards questions are forwarded
// already. An upstream that is an address of the agent's own or that
// loops (loop.go) is skipped; the question goes with an ID of its own,
// remembered while it is out, so that it is known if it comes back
// (cameBack).
func (s *Server) exchange(req *dns.Msg, network string) (*dns.Msg, error) {
	select {
	case s.forwards <- struct{}{}:
		defer func() { <-s.forwards }()
	default:
		return nil, errBusy
	}
	c := &dns.Client{Net: network, Timeout: s.timeout}
	for _, up := range s.upstream {
		if s.own(up) || s.loops(up) {
			continue
		}
		m, done := s.out(req, up)
		resp, _, err := c.Exchange(m, up)
		done()
		if err == nil && resp != nil {
			return resp, nil
		}
		s.log.Debug("dns: upstream did not answer", "upstream", up, "question", req.Question[0].String(), "error", err)
	}
	return nil, nil
}
