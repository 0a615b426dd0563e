package workload

import (
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func svcPod(name, ip string, ready bool, lbls map[string]string) v1.Pod {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: lbls},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP},
			{Name: "dns", ContainerPort: 5353, Protocol: v1.ProtocolUDP},
		}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: status}}},
	}
}

func TestServiceEndpoints(t *testing.T) {
	app := map[string]string{"app": "web"}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.ServiceSpec{Selector: app, Ports: []v1.ServicePort{
			{Name: "web", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("http")},
			{Name: "raw", Port: 81, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(9000)},
			{Name: "dns", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("dns")}, // the pod's "dns" is UDP
		}},
	}
	other := svcPod("other", "10.88.0.9", true, map[string]string{"app": "db"})
	notReady := svcPod("b", "10.88.0.3", false, app)
	noIP := svcPod("c", "", true, app)
	elsewhere := svcPod("d", "10.88.0.4", true, app)
	elsewhere.Namespace = "prod"
	withHost := svcPod("a", "10.88.0.2", true, app)
	withHost.Spec.Hostname, withHost.Spec.Subdomain = "a0", "web"
	pods := []v1.Pod{other, notReady, noIP, elsewhere, withHost}

	eps := ServiceEndpoints(svc, pods)
	if len(eps) != 2 || eps[0].PodName != "a" || eps[1].PodName != "b" {
		t.Fatalf("endpoints %+v; want pods a and b (selector, namespace, address)", eps)
	}
	a := eps[0]
	if !a.Ready || a.Hostname != "a0" || a.Addr != netip.MustParseAddr("10.88.0.2") {
		t.Errorf("pod a: %+v", a)
	}
	if a.Ports["web"] != 8080 || a.Ports["raw"] != 9000 {
		t.Errorf("ports %v; want web→8080 (named), raw→9000", a.Ports)
	}
	if _, found := a.Ports["dns"]; found {
		t.Errorf("a named targetPort of another protocol resolved: %v", a.Ports)
	}
	if eps[1].Ready {
		t.Error("a pod not ready is a ready endpoint")
	}
	if r := ReadyEndpoints(eps); len(r) != 1 || r[0].PodName != "a" {
		t.Errorf("ready endpoints %+v; want a only", r)
	}
	svc.Spec.PublishNotReadyAddresses = true
	if r := ReadyEndpoints(ServiceEndpoints(svc, pods)); len(r) != 2 {
		t.Errorf("publishNotReadyAddresses: %d serving endpoints; want 2", len(r))
	}
	svc.Spec.Selector = nil
	if eps := ServiceEndpoints(svc, pods); eps != nil {
		t.Errorf("a Service without selector has endpoints %+v", eps)
	}
}

func TestEndpointSlices(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}}}
	eps := []Endpoint{
		{Namespace: "default", PodName: "a", Addr: netip.MustParseAddr("10.88.0.2"), Ready: true, Hostname: "a0", Ports: map[string]int32{"http": 8080}},
		{Namespace: "default", PodName: "b", Addr: netip.MustParseAddr("10.88.0.3"), Ports: map[string]int32{"http": 8080}},
		{Namespace: "default", PodName: "c", Addr: netip.MustParseAddr("10.88.0.4"), Ready: true, Ports: map[string]int32{"http": 9090}},
	}
	slices := EndpointSlices(svc, eps)
	if len(slices) != 2 {
		t.Fatalf("%d slices; want one per port set", len(slices))
	}
	s := slices[0]
	if len(s.Endpoints) != 2 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" || s.Labels["kubernetes.io/service-name"] != "web" || !strings.HasPrefix(s.Name, "web-") {
		t.Errorf("first slice %+v", s)
	}
	if !*s.Endpoints[0].Conditions.Ready || *s.Endpoints[1].Conditions.Ready || *s.Endpoints[0].Hostname != "a0" || s.Endpoints[0].TargetRef.Name != "a" {
		t.Errorf("endpoints %+v", s.Endpoints)
	}
	if *slices[1].Ports[0].Port != 9090 || slices[1].Name == s.Name {
		t.Errorf("second slice %+v", slices[1])
	}
}

func TestAllocateClusterIP(t *testing.T) {
	r, err := ParseServiceRange("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	if r.DNSAddr() != netip.MustParseAddr("10.96.0.10") {
		t.Errorf("DNS address %s; want 10.96.0.10", r.DNSAddr())
	}
	used := map[netip.Addr]bool{}
	for range 12 {
		a, err := r.AllocateClusterIP("", used)
		if err != nil {
			t.Fatal(err)
		}
		if a == r.DNSAddr() || a == r.Nth(0) || used[a] {
			t.Fatalf("allocated %s (used %v)", a, used)
		}
		used[a] = true
	}
	if a, err := r.AllocateClusterIP("10.100.0.7", used); err != nil || a != netip.MustParseAddr("10.100.0.7") {
		t.Errorf("requested in range: %s %v", a, err)
	}
	for req, want := range map[string]string{
		"10.96.0.1":   "already allocated",
		"192.168.0.1": "not in the valid range",
		"10.96.0.0":   "not in the valid range",
		"nope":        "valid IP",
	} {
		if _, err := r.AllocateClusterIP(req, used); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("requested %s: %v; want %q", req, err, want)
		}
	}
	small, _ := ParseServiceRange("10.0.0.0/29")
	used = map[netip.Addr]bool{}
	for range 5 { // 8 addresses: network, broadcast out, 6 usable; the 10th is outside
		a, err := small.AllocateClusterIP("", used)
		if err != nil {
			t.Fatal(err)
		}
		used[a] = true
	}
	if _, err := small.AllocateClusterIP("", used); err != nil {
		t.Fatalf("sixth address: %v", err)
	} else if a, _ := small.AllocateClusterIP("", map[netip.Addr]bool{}); a != netip.MustParseAddr("10.0.0.1") {
		t.Errorf("first address %s", a)
	}
	if _, err := ParseServiceRange("fd00::/64"); err == nil {
		t.Error("an IPv6 range was taken")
	}
}

func TestAllocateNodePort(t *testing.T) {
	used := map[int32]bool{30000: true}
	if p, err := AllocateNodePort(0, 30000, 30002, used); err != nil || p != 30001 {
		t.Errorf("any: %d %v; want 30001", p, err)
	}
	if _, err := AllocateNodePort(30000, 30000, 30002, used); err == nil {
		t.Error("a port in use was given")
	}
	used[30001], used[30002] = true, true
	if _, err := AllocateNodePort(0, 30000, 30002, used); err == nil {
		t.Error("a full range gave a port")
	}
}
