package clusterdns

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// A client AllowClients does not accept gets REFUSED, for the zone's
// names and for names the server would forward (no open resolver); an
// accepted one is answered.
func TestServerRefusesClientsNotAllowed(t *testing.T) {
	up := NewServer("example.com", nil, slog.Default())
	up.Update(NewTable("example.com", []Service{{Namespace: "ns", Name: "up", Endpoints: []Endpoint{{Addr: netip.MustParseAddr("192.0.2.1")}}}}, nil))
	upAddr := serveBoth(t, up)
	s := NewServer("cluster.local", []string{upAddr}, slog.Default())
	s.Update(testTable())
	pod := netip.MustParseAddr("127.0.0.2")
	s.AllowClients(func(a netip.Addr) bool { return a == pod })
	addr := serveBoth(t, s)
	ask := func(network string, from netip.Addr, name string) *dns.Msg {
		t.Helper()
		c := &dns.Client{Net: network, Dialer: &net.Dialer{}}
		if network == "udp" {
			c.Dialer.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0))
		} else {
			c.Dialer.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))
		}
		resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
		if err != nil {
			t.Fatalf("%s query %s from %s: %v", network, name, from, err)
		}
		return resp
	}
	for _, network := range []string{"udp", "tcp"} {
		for name, want := range map[string]string{"web.default.svc.cluster.local.": "10.88.0.5,10.88.0.6", "up.ns.svc.example.com.": "192.0.2.1"} {
			if resp := ask(network, netip.MustParseAddr("127.0.0.1"), name); resp.Rcode != dns.RcodeRefused || len(resp.Answer) != 0 {
				t.Errorf("%s %s from a client not allowed: %s %v; want REFUSED", network, name, dns.RcodeToString[resp.Rcode], resp.Answer)
			}
			if resp := ask(network, pod, name); resp.Rcode != dns.RcodeSuccess || values(resp.Answer) != want {
				t.Errorf("%s %s from an allowed client: %s %q; want %s", network, name, dns.RcodeToString[resp.Rcode], values(resp.Answer), want)
			}
		}
	}
}
