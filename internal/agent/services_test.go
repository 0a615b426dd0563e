package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/knftables"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// fakeLink is the service interface in memory, with the Services'
// nftables table in knftables' fake.
type fakeLink struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr // by link name; absent: no link
	nft   *knftables.Fake
}

func newFakeLink() *fakeLink {
	return &fakeLink{addrs: map[string][]netip.Addr{}, nft: knftables.NewFake(knftables.IPv4Family, "test-svc")}
}

// redirect is where the table sends protocol's service (ClusterIP:port,
// the DNS address:port): the agent's listener.
func (l *fakeLink) redirect(t *testing.T, protocol string, service netip.AddrPort) netip.AddrPort {
	t.Helper()
	elems, err := l.nft.ListElements(context.Background(), "map", "redirects")
	if err != nil {
		t.Fatalf("the table's redirects: %v", err)
	}
	for _, e := range elems {
		if len(e.Key) == 3 && len(e.Value) == 2 && e.Key[0] == service.Addr().String() && e.Key[1] == strings.ToLower(protocol) && e.Key[2] == strconv.Itoa(int(service.Port())) {
			return netip.MustParseAddrPort(net.JoinHostPort(e.Value[0], e.Value[1]))
		}
	}
	t.Fatalf("no redirect of %s %s in the table:\n%s", protocol, service, l.nft.Dump())
	return netip.AddrPort{}
}

// tableHas says whether the table exists and holds line.
func (l *fakeLink) tableHas(line string) bool {
	return strings.Contains(l.nft.Dump(), line+"\n")
}

func (l *fakeLink) Sync(name string, addrs []netip.Addr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs[name] = append([]netip.Addr(nil), addrs...)
	return nil
}

func (l *fakeLink) Exists(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.addrs[name]
	return ok
}

func (l *fakeLink) Remove(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.addrs, name)
	return nil
}

func (l *fakeLink) has(name string, a string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.addrs[name] {
		if x.String() == a {
			return true
		}
	}
	return false
}

const servicesManifest = `
apiVersion: v1
kind: Pod
metadata: {name: web-a, labels: {app: web}}
spec:
  hostname: web-a
  subdomain: web-hl
  containers:
  - {name: app, image: busybox:1, command: [sleep, "1000"], ports: [{name: http, containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 18080, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-hl}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
`

// startServicesAgent runs an agent whose Services live on loopback
// (127.77.0.0/24, the DNS on a free port) with a fake interface.
func startServicesAgent(t *testing.T, rt *criclienttest.Runtime, dir string, link *fakeLink, dnsPort int) *testAgent {
	t.Helper()
	return startServicesAgentOn(t, rt, dir, link, dnsPort, clock.RealClock{})
}

// startServicesAgentOn is startServicesAgent on clk.
func startServicesAgentOn(t *testing.T, rt *criclienttest.Runtime, dir string, link *fakeLink, dnsPort int, clk clock.WithTicker) *testAgent {
	t.Helper()
	a, vols := newTestAgentWith(t, rt, dir, clk, func(c *Config) {
		r, _ := workload.ParseServiceRange("127.77.0.0/24")
		c.Services = ServicesConfig{Range: r, Interface: "test-svc", DNSPort: dnsPort, NodePortAddress: netip.MustParseAddr("127.0.0.1")}
	})
	a.svcLink, a.svcNft = link, link.nft
	return runTestAgent(t, a, vols)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.77.0.10:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestServicesAllocateResolveAndGoWithTheLast(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	link := newFakeLink()
	port := freePort(t)
	a := startServicesAgent(t, rt, dir, link, port)
	resp := a.apply(t, servicesManifest)
	if len(resp.Objects) < 3 || resp.Objects[0].Kind != agentapi.KindService || resp.Objects[0].Outcome != agentapi.OutcomeCreated {
		t.Fatalf("apply: %+v", resp.Objects)
	}
	list, err := a.ListWorkloads(agentapi.ResourceService, "default")
	if err != nil || len(list.Services) != 2 || list.Services[0].Spec.ClusterIP != "127.77.0.1" || list.Services[1].Spec.ClusterIP != v1.ClusterIPNone {
		t.Fatalf("services: %+v %v", list.Services, err)
	}
	if !link.has("test-svc", "127.77.0.1") || !link.has("test-svc", "127.77.0.10") {
		t.Errorf("interface addresses %v; want the ClusterIP and the DNS address", link.addrs)
	}
	ip := ""
	waitFor(t, "web-a has an address and is an endpoint", func() bool {
		ip = a.pod(t, "web-a").Status.PodIP
		d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "web")
		return err == nil && ip != "" && len(d.EndpointSlices) == 1 && len(d.EndpointSlices[0].Endpoints) == 1 &&
			*d.EndpointSlices[0].Endpoints[0].Conditions.Ready && *d.EndpointSlices[0].Ports[0].Port == 8080
	})
	// The DNS and web's ClusterIP listen at ports of the kernel's; the
	// table sends the DNS address:port and web's ClusterIP:18080 there
	// and lets web-a's address in.
	server := link.redirect(t, "UDP", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.10"), uint16(port))).String()
	if tcp := link.redirect(t, "TCP", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.10"), uint16(port))); tcp.Addr().String() != "127.77.0.10" || tcp.Port() == uint16(port) {
		t.Errorf("DNS over TCP listens on %s; want the DNS address at another port", tcp)
	}
	if web := link.redirect(t, "TCP", netip.MustParseAddrPort("127.77.0.1:18080")); web.Addr().String() != "127.77.0.1" || web.Port() == 18080 {
		t.Errorf("web's ClusterIP listener is %s; want the ClusterIP at another port", web)
	}
	waitFor(t, "web-a's address in the table's pods", func() bool { return link.tableHas("add element ip test-svc pods { " + ip + " }") })
	// Guarded: exactly the service link's addresses, not the range.
	for _, want := range []string{"add element ip test-svc guarded { 127.77.0.1 }", "add element ip test-svc guarded { 127.77.0.10 }",
		"add rule ip test-svc from-node ip saddr @pods fib saddr . iif oif exists accept"} {
		if !link.tableHas(want) {
			t.Errorf("no %q in the table:\n%s", want, link.nft.Dump())
		}
	}
	if d := link.nft.Dump(); strings.Contains(d, "127.77.0.0/24") {
		t.Errorf("the service range is guarded whole:\n%s", d)
	}
	for name, want := range map[string]string{
		"web.default.svc.cluster.local.":                                 "127.77.0.1",
		"web-hl.default.svc.cluster.local.":                              ip,
		"web-a.web-hl.default.svc.cluster.local.":                        ip,
		strings.ReplaceAll(ip, ".", "-") + ".default.pod.cluster.local.": ip,
	} {
		m, _, err := (&dns.Client{}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), server)
		if err != nil || len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != want {
			t.Errorf("%s: %v %v; want %s", name, m, err, want)
		}
	}

	// Re-applying keeps the ClusterIP; another one is refused as immutable.
	resp = a.apply(t, servicesManifest)
	if resp.Objects[0].Outcome != agentapi.OutcomeUnchanged {
		t.Errorf("re-apply: %+v", resp.Objects[0])
	}
	_, err = a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, strings.Replace(servicesManifest, "selector: {app: web}\n  ports: [{name: http, port: 18080", "clusterIP: 127.77.0.5\n  selector: {app: web}\n  ports: [{name: http, port: 18080", 1))})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "Service default/web: spec.clusterIP: Invalid value: \"127.77.0.5\": field is immutable") {
		t.Errorf("changed clusterIP: %v", err)
	}

	// A restarted agent adopts the Services with their addresses.
	a.stop()
	b := startServicesAgent(t, rt, dir, link, port)
	if list, err := b.ListWorkloads(agentapi.ResourceService, "default"); err != nil || len(list.Services) != 2 || list.Services[0].Spec.ClusterIP != "127.77.0.1" {
		t.Fatalf("after a restart: %+v %v", list.Services, err)
	}
	waitFor(t, "the restarted agent's DNS answers through the table", func() bool {
		server := link.redirect(t, "UDP", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.10"), uint16(port))).String()
		m, _, err := (&dns.Client{}).Exchange(new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA), server)
		return err == nil && len(m.Answer) == 1
	})
	for _, name := range []string{"web", "web-hl"} {
		if _, err := b.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if link.Exists("test-svc") {
		t.Errorf("the interface is still there without Services: %v", link.addrs)
	}
	if d := link.nft.Dump(); d != "" {
		t.Errorf("the table is still there without Services:\n%s", d)
	}
	if _, err := b.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", "web", nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deleting a deleted Service: %v", err)
	}
}

// A program holding a ClusterIP's port, or a wildcard bind of it, takes
// nothing from the Service: its listener is at a port of the kernel's. A
// nodePort another program holds is a Warning event on the Service, and
// the proxy listens once it is free.
func TestServicePortTakenIsAnEvent(t *testing.T) {
	holdClusterPort, err := net.Listen("tcp", "127.77.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	defer holdClusterPort.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:31918")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	link := newFakeLink()
	a := startServicesAgent(t, criclienttest.New(), t.TempDir(), link, freePort(t))
	a.apply(t, servicesManifest+`---
apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 18082, targetPort: 8080, nodePort: 31918}]
`)
	waitFor(t, "a FailedToListen event", func() bool {
		d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "np")
		return err == nil && len(d.Events) == 1 && d.Events[0].Reason == "FailedToListen" && strings.Contains(d.Events[0].Message, "127.0.0.1:31918")
	})
	if d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "web"); err != nil || len(d.Events) != 0 {
		t.Errorf("web's events with its ClusterIP port held by another program: %+v %v; want none", d.Events, err)
	}
	if c, err := net.Dial("tcp", link.redirect(t, "TCP", netip.MustParseAddrPort("127.77.0.1:18080")).String()); err != nil {
		t.Errorf("web's ClusterIP listener: %v", err)
	} else {
		c.Close()
	}
	taken.Close()
	waitFor(t, "the proxy listens on the freed nodePort", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:31918")
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	for _, name := range []string{"web", "web-hl", "np"} {
		if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// A LoadBalancer Service listens on its nodePort and its port on the
// host (as k3s's ServiceLB) and reports the node's addresses as ingress.
func TestLoadBalancerService(t *testing.T) {
	link := newFakeLink()
	a := startServicesAgent(t, criclienttest.New(), t.TempDir(), link, freePort(t))
	a.apply(t, `
apiVersion: v1
kind: Service
metadata: {name: lb}
spec:
  type: LoadBalancer
  selector: {app: lb}
  ports: [{port: 18081, targetPort: 8080, nodePort: 31917}]
`)
	list, err := a.ListWorkloads(agentapi.ResourceService, "default")
	if err != nil || len(list.Services) != 1 {
		t.Fatalf("services: %+v %v", list, err)
	}
	s := list.Services[0]
	if s.Spec.Ports[0].NodePort != 31917 || len(s.Status.LoadBalancer.Ingress) != len(a.deps.node.hostIPs) {
		t.Errorf("nodePort %d, ingress %v; want 31917 and the node's addresses %v", s.Spec.Ports[0].NodePort, s.Status.LoadBalancer.Ingress, a.deps.node.hostIPs)
	}
	for _, addr := range []string{"127.0.0.1:18081", "127.0.0.1:31917", link.redirect(t, "TCP", netip.MustParseAddrPort("127.77.0.1:18081")).String()} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Errorf("nothing listens on %s: %v", addr, err)
			continue
		}
		c.Close()
	}
	if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", "lb", nil); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:31917"); err == nil {
		c.Close()
		t.Error("the nodePort still listens after the delete")
	}
}

// A service range that holds one of the host's own addresses (a LAN on
// 10.100.0.0/16 under the default 10.96.0.0/12) leaves the Services
// without a host side, each with a FailedToSetUpHost event naming the
// flag; the agent itself runs on (its pods are not refused).
func TestServiceRangeHoldingAHostAddressFailsClosed(t *testing.T) {
	link := newFakeLink()
	a, vols := newTestAgentWith(t, criclienttest.New(), t.TempDir(), clock.RealClock{}, func(c *Config) {
		r, _ := workload.ParseServiceRange("127.77.0.0/24")
		c.Services = ServicesConfig{Range: r, Interface: "test-svc", DNSPort: freePort(t), NodePortAddress: netip.MustParseAddr("127.0.0.1")}
	})
	a.svcLink, a.svcNft = link, link.nft
	a.hostAddrs = func() (map[string][]netip.Addr, error) {
		return map[string][]netip.Addr{"eth1": {netip.MustParseAddr("127.77.0.9")}}, nil
	}
	ta := runTestAgent(t, a, vols)
	ta.apply(t, servicesManifest)
	waitFor(t, "a FailedToSetUpHost event naming the flag", func() bool {
		d, err := ta.DescribeWorkload(agentapi.ResourceService, "default", "web")
		return err == nil && len(d.Events) > 0 && d.Events[0].Reason == "FailedToSetUpHost" &&
			strings.Contains(d.Events[0].Message, "--service-cluster-ip-range 127.77.0.0/24 holds 127.77.0.9, an address of the host's interface eth1")
	})
	if link.Exists("test-svc") {
		t.Errorf("the service link was made although the range holds a host address")
	}
	waitFor(t, "the pods run", func() bool { return ta.pod(t, "web-a").Status.Phase == v1.PodRunning })
}
