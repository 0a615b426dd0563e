package agent

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const extService = `
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: web.default.svc.cluster.local
  selector: {app: web}
`

const extAsClusterIP = `
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  selector: {app: web}
  ports: [{port: 18082, targetPort: 8080}]
`

// An ExternalName Service has no ClusterIP, endpoints or listeners; its
// name is a CNAME to the externalName (here web's name, answered with
// web's ClusterIP). Re-applied as a ClusterIP Service it gets an address;
// back as ExternalName the address is released.
func TestExternalNameService(t *testing.T) {
	link := newFakeLink()
	port := freePort(t)
	a := startServicesAgent(t, criclienttest.New(), t.TempDir(), link, port)
	a.apply(t, servicesManifest+"---"+extService)
	ext := a.service(t, "ext")
	if ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 {
		t.Errorf("ExternalName clusterIP %q %v; want none", ext.Spec.ClusterIP, ext.Spec.ClusterIPs)
	}
	waitFor(t, "web-a is web's endpoint", func() bool {
		d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "web")
		return err == nil && len(d.EndpointSlices) == 1
	})
	if d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "ext"); err != nil || len(d.EndpointSlices) != 0 {
		t.Errorf("ExternalName EndpointSlices: %+v %v; want none (its selector is ignored)", d.EndpointSlices, err)
	}
	server := link.redirect(t, "UDP", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.10"), uint16(port))).String()
	m, _, err := (&dns.Client{}).Exchange(new(dns.Msg).SetQuestion("ext.default.svc.cluster.local.", dns.TypeA), server)
	if err != nil || len(m.Answer) != 2 || m.Answer[0].(*dns.CNAME).Target != "web.default.svc.cluster.local." || m.Answer[1].(*dns.A).A.String() != "127.77.0.1" {
		t.Errorf("ext A: %v %v; want the CNAME to web and web's ClusterIP", m, err)
	}

	if r := a.apply(t, extAsClusterIP); r.Objects[0].Outcome != agentapi.OutcomeConfigured {
		t.Errorf("ext as ClusterIP: %+v", r.Objects[0])
	}
	if ip := a.service(t, "ext").Spec.ClusterIP; ip != "127.77.0.2" || !link.has("test-svc", ip) {
		t.Errorf("ext as ClusterIP: clusterIP %q (interface %v); want 127.77.0.2 on the interface", ip, link.addrs)
	}
	a.apply(t, extService)
	if ip := a.service(t, "ext").Spec.ClusterIP; ip != "" || link.has("test-svc", "127.77.0.2") {
		t.Errorf("ext back to ExternalName: clusterIP %q, interface %v; want it released", ip, link.addrs)
	}
	for _, name := range []string{"web", "web-hl", "ext"} {
		if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// externalIPs are accepted but not served: a Warning event says so.
func TestExternalIPsAreAnEvent(t *testing.T) {
	a := startServicesAgent(t, criclienttest.New(), t.TempDir(), newFakeLink(), freePort(t))
	a.apply(t, strings.Replace(extAsClusterIP, "spec:\n", "spec:\n  externalIPs: [192.0.2.7]\n", 1))
	d, err := a.DescribeWorkload(agentapi.ResourceService, "default", "ext")
	if err != nil || len(d.Events) != 1 || d.Events[0].Reason != "ExternalIPsNotServed" || !strings.Contains(d.Events[0].Message, "192.0.2.7") {
		t.Errorf("events %+v %v; want one ExternalIPsNotServed", d.Events, err)
	}
	if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceService, "default", "ext", nil); err != nil {
		t.Fatal(err)
	}
}

// service returns the Service name of namespace default.
func (a *testAgent) service(t *testing.T, name string) v1.Service {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceService, "default", name)
	if err != nil || d.Service == nil {
		t.Fatalf("service %s: %v", name, err)
	}
	return *d.Service
}

// sessionAffinity ClientIP reaches the proxy's rules: its timeout, one
// group per Service port shared by its listeners; None gives none.
func TestProxyRulesAffinity(t *testing.T) {
	timeout := int32(60)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.0.1", SessionAffinity: v1.ServiceAffinityClientIP,
		SessionAffinityConfig: &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}},
		Ports:                 []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}},
	}}
	a := &Agent{}
	rules := a.proxyRules(&serviceObj{svc: svc}, nil)
	if len(rules) != 2 || rules[0].Affinity != time.Minute || rules[0].AffinityGroup == "" || rules[0].AffinityGroup != rules[1].AffinityGroup {
		t.Errorf("rules %+v; want the ClusterIP and NodePort listeners with a 1m affinity in one group", rules)
	}
	svc.Spec.SessionAffinity, svc.Spec.SessionAffinityConfig = v1.ServiceAffinityNone, nil
	if rules := a.proxyRules(&serviceObj{svc: svc}, nil); rules[0].Affinity != 0 {
		t.Errorf("None: affinity %v", rules[0].Affinity)
	}
}

// Every listener of every port of a Service shares its connection cap:
// the rules carry the Service's key.
func TestProxyRulesShareTheServiceCap(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.1",
		Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
			{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}},
	}}
	rules := (&Agent{}).proxyRules(&serviceObj{svc: svc}, nil)
	if len(rules) != 6 {
		t.Fatalf("%d rules; want 6 (ClusterIP, NodePort, LoadBalancer per port)", len(rules))
	}
	for _, r := range rules {
		if r.Service != "default/web" {
			t.Errorf("rule %s: Service %q; want default/web", r.Name, r.Service)
		}
	}
}
