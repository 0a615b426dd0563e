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

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// fakeLink is the service interface in memory.
type fakeLink struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr // by link name; absent: no link
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
	a, vols := newTestAgentWith(t, rt, dir, clock.RealClock{}, func(c *Config) {
		r, _ := workload.ParseServiceRange("127.77.0.0/24")
		c.Services = ServicesConfig{Range: r, Interface: "test-svc", DNSPort: dnsPort, NodePortAddress: netip.MustParseAddr("127.0.0.1")}
	})
	a.svcLink = link
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
	link := &fakeLink{addrs: map[string][]netip.Addr{}}
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
	server := net.JoinHostPort("127.77.0.10", strconv.Itoa(port))
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
	for _, name := range []string{"web", "web-hl"} {
		if _, err := b.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if link.Exists("test-svc") {
		t.Errorf("the interface is still there without Services: %v", link.addrs)
	}
	if _, err := b.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", "web", nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deleting a deleted Service: %v", err)
	}
}

// A port another program holds is a Warning event on the Service, and
// the proxy listens once it is free.
func TestServicePortTakenIsAnEvent(t *testing.T) {
	taken, err := net.Listen("tcp", "127.77.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	link := &fakeLink{addrs: map[string][]netip.Addr{}}
	a := startServicesAgent(t, criclienttest.New(), t.TempDir(), link, freePort(t))
	a.apply(t, servicesManifest)
	waitFor(t, "a FailedToListen event", func() bool {
		d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "web")
		return err == nil && len(d.Events) == 1 && d.Events[0].Reason == "FailedToListen" && strings.Contains(d.Events[0].Message, "127.77.0.1:18080")
	})
	taken.Close()
	waitFor(t, "the proxy listens on the freed port", func() bool {
		c, err := net.Dial("tcp", "127.77.0.1:18080")
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	for _, name := range []string{"web", "web-hl"} {
		if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// A LoadBalancer Service listens on its nodePort and its port on the
// host (as k3s's ServiceLB) and reports the node's addresses as ingress.
func TestLoadBalancerService(t *testing.T) {
	link := &fakeLink{addrs: map[string][]netip.Addr{}}
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
	for _, addr := range []string{"127.0.0.1:18081", "127.0.0.1:31917", "127.77.0.1:18081"} {
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
