package clusterdns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func testTable() *Table {
	return NewTable("Cluster.Local", []Service{
		{
			Namespace: "default", Name: "web",
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 8080}},
			Endpoints: []Endpoint{
				{Addr: netip.MustParseAddr("10.88.0.5")},
				{Addr: netip.MustParseAddr("10.88.0.6")},
			},
		},
		{
			Namespace: "db", Name: "pg",
			Ports:     []Port{{Name: "sql", Protocol: "TCP", Port: 5432}},
			Endpoints: []Endpoint{{Addr: netip.MustParseAddr("10.88.0.7"), Hostname: "pg-0"}, {Addr: netip.MustParseAddr("fd00::7"), Hostname: "pg-1"}},
		},
		{Namespace: "default", Name: "idle"},
	}, []Pod{{Namespace: "default", Addr: netip.MustParseAddr("10.88.0.9")}})
}

// values renders the data of an answer's records, sorted.
func values(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		hdr := rr.Header().String()
		out = append(out, strings.TrimSpace(strings.TrimPrefix(rr.String(), hdr)))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func TestTableLookup(t *testing.T) {
	tab := testTable()
	for _, tc := range []struct {
		name    string
		qtype   uint16
		want    string
		missing bool // NXDOMAIN
	}{
		{name: "web.default.svc.cluster.local.", qtype: dns.TypeA, want: "10.88.0.5,10.88.0.6"},
		{name: "WEB.Default.SVC.cluster.local.", qtype: dns.TypeA, want: "10.88.0.5,10.88.0.6"},
		{name: "web.default.svc.cluster.local.", qtype: dns.TypeAAAA, want: ""},
		{name: "10-88-0-5.web.default.svc.cluster.local.", qtype: dns.TypeA, want: "10.88.0.5"},
		{name: "_http._tcp.web.default.svc.cluster.local.", qtype: dns.TypeSRV, want: "0 100 80 10-88-0-5.web.default.svc.cluster.local.,0 100 80 10-88-0-6.web.default.svc.cluster.local."},
		{name: "_sql._tcp.pg.db.svc.cluster.local.", qtype: dns.TypeSRV, want: "0 100 5432 pg-0.pg.db.svc.cluster.local.,0 100 5432 pg-1.pg.db.svc.cluster.local."},
		{name: "pg-0.pg.db.svc.cluster.local.", qtype: dns.TypeA, want: "10.88.0.7"},
		{name: "pg-1.pg.db.svc.cluster.local.", qtype: dns.TypeAAAA, want: "fd00::7"},
		{name: "pg.db.svc.cluster.local.", qtype: dns.TypeANY, want: "10.88.0.7,fd00::7"},
		{name: "7.0.88.10.in-addr.arpa.", qtype: dns.TypePTR, want: "pg-0.pg.db.svc.cluster.local."},
		{name: "5.0.88.10.in-addr.arpa.", qtype: dns.TypePTR, want: "10-88-0-5.web.default.svc.cluster.local."},
		{name: "10-88-0-9.default.pod.cluster.local.", qtype: dns.TypeA, want: "10.88.0.9"},
		{name: "idle.default.svc.cluster.local.", qtype: dns.TypeA, want: ""},                  // a Service with no ready endpoint exists
		{name: "default.svc.cluster.local.", qtype: dns.TypeA, want: ""},                       // empty non-terminal
		{name: "svc.cluster.local.", qtype: dns.TypeA, want: ""},                               // empty non-terminal
		{name: "dns-version.cluster.local.", qtype: dns.TypeTXT, want: "\"1.1.0\""},            // the specification's version record
		{name: "nope.default.svc.cluster.local.", qtype: dns.TypeA, missing: true},             // unknown Service
		{name: "web.other.svc.cluster.local.", qtype: dns.TypeA, missing: true},                // other namespace
		{name: "_http._udp.web.default.svc.cluster.local.", qtype: dns.TypeSRV, missing: true}, // wrong protocol
	} {
		got, exists := tab.Lookup(tc.name, tc.qtype)
		if exists == tc.missing {
			t.Errorf("%s %s: exists %v; want %v", tc.name, dns.TypeToString[tc.qtype], exists, !tc.missing)
			continue
		}
		if v := values(got); v != tc.want {
			t.Errorf("%s %s: %q; want %q", tc.name, dns.TypeToString[tc.qtype], v, tc.want)
		}
	}
}

func TestTableInZone(t *testing.T) {
	tab := testTable()
	for name, want := range map[string]bool{
		"cluster.local.":          true,
		"anything.cluster.local.": true,
		"example.com.":            false,
		"local.":                  false,
		"7.0.88.10.in-addr.arpa.": true,  // an endpoint's reverse name
		"8.8.8.8.in-addr.arpa.":   false, // someone else's: forwarded
		"evilcluster.local.":      false,
	} {
		if got := tab.InZone(name); got != want {
			t.Errorf("InZone(%q) = %v; want %v", name, got, want)
		}
	}
}

// Answers are copies: a caller changing one (the server sets TTLs and
// truncates) leaves the table as it was.
func TestTableAnswersAreCopies(t *testing.T) {
	tab := testTable()
	got, _ := tab.Lookup("web.default.svc.cluster.local.", dns.TypeA)
	got[0].Header().Name = "changed."
	again, _ := tab.Lookup("web.default.svc.cluster.local.", dns.TypeA)
	if again[0].Header().Name != "web.default.svc.cluster.local." {
		t.Errorf("the table's record was changed through an answer: %s", again[0])
	}
}

// A ClusterIP Service's name is its virtual address, never its endpoints'.
func TestTableClusterIP(t *testing.T) {
	vip := netip.MustParseAddr("10.96.0.1")
	tbl := NewTable("cluster.local", []Service{{Namespace: "default", Name: "web", ClusterIP: vip,
		Ports:     []Port{{Name: "http", Protocol: "TCP", Port: 80}},
		Endpoints: []Endpoint{{Addr: netip.MustParseAddr("10.88.0.5"), Hostname: "a"}}}}, nil)
	answer, _ := tbl.Lookup("web.default.svc.cluster.local.", dns.TypeA)
	if values(answer) != "10.96.0.1" {
		t.Errorf("A %q; want the ClusterIP", values(answer))
	}
	if _, exists := tbl.Lookup("a.web.default.svc.cluster.local.", dns.TypeA); exists {
		t.Error("an endpoint hostname record for a ClusterIP Service")
	}
	srv, _ := tbl.Lookup("_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV)
	if len(srv) != 1 || srv[0].(*dns.SRV).Target != "web.default.svc.cluster.local." {
		t.Errorf("SRV %v; want one naming the Service", srv)
	}
}
