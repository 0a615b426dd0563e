package clusterdns

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// extTable: web (ClusterIP 10.96.0.1); ExternalName Services ext → web's
// name, out → a name upstream knows, gone → a Service that does not
// exist, loop-a ↔ loop-b, ip → an address.
func extTable() *Table {
	return NewTable("cluster.local", []Service{
		{Namespace: "default", Name: "web", ClusterIP: netip.MustParseAddr("10.96.0.1"), Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}}},
		{Namespace: "default", Name: "ext", ExternalName: "Web.default.svc.cluster.local"},
		{Namespace: "default", Name: "out", ExternalName: "up.ns.svc.example.com."},
		{Namespace: "default", Name: "gone", ExternalName: "nope.default.svc.cluster.local"},
		{Namespace: "default", Name: "loop-a", ExternalName: "loop-b.default.svc.cluster.local"},
		{Namespace: "default", Name: "loop-b", ExternalName: "loop-a.default.svc.cluster.local"},
		{Namespace: "default", Name: "ip", ExternalName: "192.0.2.9"},
	}, nil)
}

func TestTableExternalName(t *testing.T) {
	tab := extTable()
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT} {
		got, exists := tab.Lookup("ext.default.svc.cluster.local.", qtype)
		if !exists || values(got) != "web.default.svc.cluster.local." {
			t.Errorf("ext %s: %q %v; want the CNAME, fully qualified and lower case", dns.TypeToString[qtype], values(got), exists)
		}
	}
	if _, exists := tab.Lookup("ip.default.svc.cluster.local.", dns.TypeA); exists {
		t.Error("an ExternalName that is an address has a name; CoreDNS answers NXDOMAIN")
	}
	if _, exists := tab.Lookup("_http._tcp.ext.default.svc.cluster.local.", dns.TypeSRV); exists {
		t.Error("an ExternalName Service has SRV records")
	}
}

// The server follows an ExternalName's CNAME: within the zone from its
// table, outside it through the upstream servers (over UDP and TCP); a
// CNAME question gets the CNAME alone; a chain that ends in the zone
// without records of the type (no such name, no data, a loop) gets no
// data (NOERROR, the SOA), as from CoreDNS.
func TestServerFollowsExternalName(t *testing.T) {
	up := NewServer("example.com", nil, slog.Default())
	up.Update(NewTable("example.com", []Service{{Namespace: "ns", Name: "up", Endpoints: []Endpoint{{Addr: netip.MustParseAddr("192.0.2.1")}}}}, nil))
	s := NewServer("cluster.local", []string{serveBoth(t, up)}, slog.Default())
	s.Update(extTable())
	addr := serveBoth(t, s)
	for _, tc := range []struct {
		network, name string
		qtype         uint16
		want          string
	}{
		{"udp", "ext.default.svc.cluster.local.", dns.TypeA, "web.default.svc.cluster.local.,10.96.0.1"},
		{"tcp", "ext.default.svc.cluster.local.", dns.TypeA, "web.default.svc.cluster.local.,10.96.0.1"},
		{"udp", "ext.default.svc.cluster.local.", dns.TypeAAAA, ""}, // web has no AAAA: no data, as CoreDNS
		{"udp", "ext.default.svc.cluster.local.", dns.TypeANY, "web.default.svc.cluster.local.,10.96.0.1"},
		{"udp", "ext.default.svc.cluster.local.", dns.TypeCNAME, "web.default.svc.cluster.local."},
		{"udp", "out.default.svc.cluster.local.", dns.TypeA, "up.ns.svc.example.com.,192.0.2.1"},
		{"tcp", "out.default.svc.cluster.local.", dns.TypeA, "up.ns.svc.example.com.,192.0.2.1"},
		{"udp", "out.default.svc.cluster.local.", dns.TypeCNAME, "up.ns.svc.example.com."},
		{"udp", "gone.default.svc.cluster.local.", dns.TypeA, ""},   // no such Service: no data
		{"udp", "loop-a.default.svc.cluster.local.", dns.TypeA, ""}, // a loop: no data
		{"udp", "loop-a.default.svc.cluster.local.", dns.TypeCNAME, "loop-b.default.svc.cluster.local."},
	} {
		resp := query(t, tc.network, addr, tc.name, tc.qtype)
		noData := tc.want == "" && (len(resp.Ns) != 1 || resp.Ns[0].Header().Rrtype != dns.TypeSOA)
		if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative || ordered(resp.Answer) != tc.want || noData {
			t.Errorf("%s %s %s: rcode %s aa %v answer %q; want %q", tc.network, tc.name, dns.TypeToString[tc.qtype],
				dns.RcodeToString[resp.Rcode], resp.Authoritative, ordered(resp.Answer), tc.want)
		}
	}
	if resp := query(t, "udp", addr, "ip.default.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("ExternalName to an address: %s; want NXDOMAIN", dns.RcodeToString[resp.Rcode])
	}
}

// Without upstream servers an outside target's CNAME is answered alone.
func TestServerExternalNameWithoutUpstream(t *testing.T) {
	s := NewServer("cluster.local", nil, slog.Default())
	s.Update(extTable())
	resp := query(t, "udp", serve(t, s), "out.default.svc.cluster.local.", dns.TypeA)
	if resp.Rcode != dns.RcodeSuccess || ordered(resp.Answer) != "up.ns.svc.example.com." {
		t.Errorf("rcode %s answer %q; want the CNAME alone", dns.RcodeToString[resp.Rcode], ordered(resp.Answer))
	}
}

// ordered renders an answer's data in the answer's order.
func ordered(rrs []dns.RR) string {
	out := ""
	for i, rr := range rrs {
		if i > 0 {
			out += ","
		}
		out += values([]dns.RR{rr})
	}
	return out
}
