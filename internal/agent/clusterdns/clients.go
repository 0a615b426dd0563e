package clusterdns

import (
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// AllowClients makes the server answer only clients whose address allow
// accepts (the agent's: the host itself and this node's pods); any other
// gets REFUSED, recursion included: the server is no open resolver for
// whoever routes to it. Without it every client is answered. Call it
// before ListenAndServe.
func (s *Server) AllowClients(allow func(netip.Addr) bool) { s.allow = allow }

// refused is the answer to a client not allowed; nil for one allowed.
func (s *Server) refused(w dns.ResponseWriter, req *dns.Msg) *dns.Msg {
	if s.allow == nil || s.allow(clientAddr(w.RemoteAddr())) {
		return nil
	}
	s.log.Debug("dns: refused a client that is neither the host nor a pod of this node", "client", w.RemoteAddr())
	return new(dns.Msg).SetRcode(req, dns.RcodeRefused)
}

func clientAddr(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
