package clusterdns

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// TTL is the time to live of every record this server owns: as CoreDNS's
// kubernetes plugin, short, since endpoints come and go with readiness.
const TTL = 5

// Port is a named port of a Service, for its SRV records.
type Port struct {
	Name     string
	Protocol string // TCP, UDP or SCTP
	Port     int32
}

// Endpoint is a ready endpoint of a Service: the address of a pod, with
// its hostname when the pod sets hostname and subdomain = the Service.
type Endpoint struct {
	Addr     netip.Addr
	Hostname string
}

// Service is what the DNS server needs of a Service and its endpoints.
type Service struct {
	Namespace string
	Name      string
	Ports     []Port
	Endpoints []Endpoint // ready ones only: readiness removes an endpoint
	// ClusterIP, when valid, is the Service's virtual address: its name
	// resolves to it alone (the proxy behind it spreads connections over
	// the endpoints); invalid for a headless Service.
	ClusterIP netip.Addr
	// ExternalName, when set, makes the Service's name a CNAME to it
	// (an ExternalName Service: no address, ports or endpoints of its own).
	ExternalName string
}

// Pod is a pod address, for <a-b-c-d>.<ns>.pod.<zone>.
type Pod struct {
	Namespace string
	Addr      netip.Addr
}

// Table holds the records of one zone, keyed by lower-case owner name.
// It is never changed once built.
type Table struct {
	zone  string // "cluster.local."
	soa   *dns.SOA
	names map[string][]dns.RR
}

// NewTable builds the records of zone (e.g. "cluster.local") for the
// services and pods given. Names that are not valid DNS labels are left
// out: the manifest validation refuses them before they get here.
func NewTable(zone string, services []Service, pods []Pod) *Table {
	t := &Table{zone: dns.Fqdn(strings.ToLower(zone)), names: map[string][]dns.RR{}}
	t.soa = &dns.SOA{
		Hdr:     dns.RR_Header{Name: t.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
		Ns:      "ns.dns." + t.zone,
		Mbox:    "hostmaster." + t.zone,
		Serial:  1,
		Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL,
	}
	t.add(t.soa)
	t.add(&dns.TXT{Hdr: t.hdr("dns-version."+t.zone, dns.TypeTXT), Txt: []string{"1.1.0"}})
	for _, s := range services {
		t.addService(s)
	}
	for _, p := range pods {
		if p.Addr.IsValid() {
			name := dashed(p.Addr) + "." + p.Namespace + ".pod." + t.zone
			t.add(addrRR(t.hdr(name, 0), p.Addr))
		}
	}
	t.addParents()
	return t
}

// addParents makes every name between a record's owner and the zone
// exist (an empty non-terminal such as svc.cluster.local.), so that
// those names answer with no data rather than NXDOMAIN.
func (t *Table) addParents() {
	for name := range t.names {
		if !dns.IsSubDomain(t.zone, name) {
			continue
		}
		labels := dns.SplitDomainName(name)
		zoneLabels := dns.CountLabel(t.zone)
		for i := 1; i < len(labels)-zoneLabels; i++ {
			t.ensure(dns.Fqdn(strings.Join(labels[i:], ".")))
		}
	}
}

func (t *Table) hdr(name string, typ uint16) dns.RR_Header {
	return dns.RR_Header{Name: strings.ToLower(name), Rrtype: typ, Class: dns.ClassINET, Ttl: TTL}
}

func (t *Table) add(rr dns.RR) {
	name := rr.Header().Name
	t.names[name] = append(t.names[name], rr)
}

// addService adds the Service's name, its endpoints' hostnames, SRV and
// PTR records. A Service with no ready endpoint still exists: its name
// answers with no data rather than NXDOMAIN.
func (t *Table) addService(s Service) {
	svc := s.Name + "." + s.Namespace + ".svc." + t.zone
	if s.ExternalName != "" {
		t.addExternalName(svc, s.ExternalName)
		return
	}
	t.ensure(svc)
	if s.ClusterIP.IsValid() {
		t.addClusterIP(svc, s)
		return
	}
	for _, ep := range s.Endpoints {
		if !ep.Addr.IsValid() {
			continue
		}
		t.add(addrRR(t.hdr(svc, 0), ep.Addr))
		target := endpointName(ep) + "." + svc
		t.add(addrRR(t.hdr(target, 0), ep.Addr))
		if rev := reverse(ep.Addr); rev != "" {
			t.add(&dns.PTR{Hdr: t.hdr(rev, dns.TypePTR), Ptr: strings.ToLower(target)})
		}
		for _, p := range s.Ports {
			if p.Name == "" || p.Port < 1 || p.Port > 65535 {
				continue
			}
			name := fmt.Sprintf("_%s._%s.%s", p.Name, strings.ToLower(p.Protocol), svc)
			t.add(&dns.SRV{Hdr: t.hdr(name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: strings.ToLower(target)})
		}
	}
}

// addClusterIP adds a ClusterIP Service's records: its name's address
// and SRV records naming it, as the specification has for a Service that
// is not headless.
func (t *Table) addClusterIP(svc string, s Service) {
	t.add(addrRR(t.hdr(svc, 0), s.ClusterIP))
	if rev := reverse(s.ClusterIP); rev != "" {
		t.add(&dns.PTR{Hdr: t.hdr(rev, dns.TypePTR), Ptr: strings.ToLower(svc)})
	}
	for _, p := range s.Ports {
		if p.Name == "" || p.Port < 1 || p.Port > 65535 {
			continue
		}
		name := fmt.Sprintf("_%s._%s.%s", p.Name, strings.ToLower(p.Protocol), svc)
		t.add(&dns.SRV{Hdr: t.hdr(name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: strings.ToLower(svc)})
	}
}

// addExternalName makes an ExternalName Service's name a CNAME to its
// externalName, made fully qualified. As CoreDNS's kubernetes plugin, an
// externalName that is an IP address gives no record: the name does not
// exist.
func (t *Table) addExternalName(svc, target string) {
	if _, err := netip.ParseAddr(strings.TrimSuffix(target, ".")); err == nil {
		return
	}
	t.add(&dns.CNAME{Hdr: t.hdr(svc, dns.TypeCNAME), Target: dns.Fqdn(strings.ToLower(target))})
}

// ensure makes name exist with no records of its own.
func (t *Table) ensure(name string) {
	name = strings.ToLower(name)
	if _, ok := t.names[name]; !ok {
		t.names[name] = nil
	}
}

// endpointName is an endpoint's own label: its hostname, else its
// address with dashes, as the specification names unnamed endpoints.
func endpointName(ep Endpoint) string {
	if ep.Hostname != "" {
		return ep.Hostname
	}
	return dashed(ep.Addr)
}

func addrRR(h dns.RR_Header, a netip.Addr) dns.RR {
	if a.Is4() || a.Is4In6() {
		h.Rrtype = dns.TypeA
		return &dns.A{Hdr: h, A: a.Unmap().AsSlice()}
	}
	h.Rrtype = dns.TypeAAAA
	return &dns.AAAA{Hdr: h, AAAA: a.AsSlice()}
}

// dashed writes an address as a DNS label: 10.88.0.5 → 10-88-0-5,
// fd00::5 → fd00--5.
func dashed(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.String(), ":", "-")
}

func reverse(a netip.Addr) string {
	name, err := dns.ReverseAddr(a.Unmap().String())
	if err != nil {
		return ""
	}
	return name
}

// InZone reports whether name (fully qualified) is this table's to
// answer: the zone and below, and the reverse names of its addresses.
func (t *Table) InZone(name string) bool {
	name = strings.ToLower(name)
	if dns.IsSubDomain(t.zone, name) {
		return true
	}
	_, ok := t.names[name]
	return ok
}

// Lookup answers a question: the records of that type, or the name's
// CNAME (an ExternalName Service's; the caller follows it), and whether
// the name exists at all.
func (t *Table) Lookup(name string, qtype uint16) (answer []dns.RR, exists bool) {
	rrs, ok := t.names[strings.ToLower(name)]
	for _, rr := range rrs {
		if typ := rr.Header().Rrtype; qtype == dns.TypeANY || typ == qtype || typ == dns.TypeCNAME {
			answer = append(answer, dns.Copy(rr))
		}
	}
	return answer, ok
}

// SOA is the zone's SOA record, for the authority section of negative
// answers.
func (t *Table) SOA() dns.RR { return dns.Copy(t.soa) }
