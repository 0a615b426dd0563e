package clusterdns

import (
	"strings"

	"github.com/miekg/dns"
)

// maxCNAMEs bounds a CNAME chain, as CoreDNS's (8 records).
const maxCNAMEs = 8

// follow completes an answer that ends in a CNAME (an ExternalName
// Service's name) with the target's records of the question's type, as
// CoreDNS's kubernetes plugin does: a target in the zone from the table
// (another Service's name; chains followed), any other through the
// upstream servers, whose answer (CNAMEs and all) is added as it is. As
// CoreDNS, a chain that ends in the zone without records of the type (no
// such name, no data, a loop) answers nothing at all; without an upstream
// answer the CNAMEs stand alone. A CNAME question is answered with the
// CNAME only. truncated is set when the upstream answer was truncated, so
// that the client asks again over TCP.
func (s *Server) follow(t *Table, req *dns.Msg, answer []dns.RR, network string) (_ []dns.RR, truncated bool) {
	q := req.Question[0]
	if q.Qtype == dns.TypeCNAME {
		return answer, false
	}
	seen := map[string]bool{strings.ToLower(q.Name): true}
	for range maxCNAMEs {
		cname, ok := answer[len(answer)-1].(*dns.CNAME)
		if !ok {
			return answer, false
		}
		target := strings.ToLower(cname.Target)
		if seen[target] {
			return nil, false
		}
		seen[target] = true
		if !t.InZone(target) {
			return s.upstreamAnswer(req, target, answer, network)
		}
		more, _ := t.Lookup(target, q.Qtype)
		if len(more) == 0 {
			return nil, false
		}
		answer = append(answer, more...)
	}
	return nil, false
}

// upstreamAnswer adds the upstream servers' answer for target.
func (s *Server) upstreamAnswer(req *dns.Msg, target string, answer []dns.RR, network string) ([]dns.RR, bool) {
	if len(s.upstream) == 0 {
		return answer, false
	}
	m := new(dns.Msg).SetQuestion(target, req.Question[0].Qtype)
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), opt.Do())
	}
	resp, _ := s.exchange(m, network) // too many forwarded (errBusy): the CNAME alone
	if resp == nil {
		return answer, false
	}
	return append(answer, resp.Answer...), resp.Truncated
}
