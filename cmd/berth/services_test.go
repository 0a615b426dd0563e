package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
)

func TestServiceTablesHaveKubectlColumns(t *testing.T) {
	now := time.Unix(10000, 0)
	created := metav1.NewTime(now.Add(-90 * time.Second))
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: created}
	}
	web := v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1",
		Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	list := agentapi.WorkloadList{Services: []v1.Service{
		web,
		{ObjectMeta: meta("np"), Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.0.2", Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}},
		{ObjectMeta: meta("lb"), Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.3", Ports: []v1.ServicePort{{Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}}}},
		{ObjectMeta: meta("db"), Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
	}}
	var out bytes.Buffer
	if err := writeWorkloadTable(&out, list, agentapi.ResourceService, false, true, now); err != nil {
		t.Fatal(err)
	}
	want := "NAME   TYPE           CLUSTER-IP   EXTERNAL-IP      PORT(S)        AGE   SELECTOR\n" +
		"web    ClusterIP      10.96.0.1    <none>           80/TCP         90s   app=web\n" +
		"np     NodePort       10.96.0.2    <none>           80:30080/TCP   90s   <none>\n" +
		"lb     LoadBalancer   10.96.0.3    <pending>        53:30053/UDP   90s   <none>\n" +
		"db     ExternalName   <none>       db.example.com   <none>         90s   <none>\n"
	if out.String() != want {
		t.Errorf("services:\n%s\nwant\n%s", out.String(), want)
	}

	eps := []workload.Endpoint{
		{Namespace: "default", PodName: "a", Addr: netip.MustParseAddr("10.88.0.2"), Ready: true, Ports: map[string]int32{"http": 8080}},
		{Namespace: "default", PodName: "b", Addr: netip.MustParseAddr("10.88.0.3"), Ports: map[string]int32{"http": 8080}},
	}
	slices := workload.EndpointSlices(&web, eps)
	out.Reset()
	if err := writeWorkloadTable(&out, agentapi.WorkloadList{EndpointSlices: slices}, agentapi.ResourceEndpointSlice, false, false, now); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "NAME ") || !strings.Contains(out.String(), "   IPv4          8080    10.88.0.2,10.88.0.3   90s\n") {
		t.Errorf("endpointslices:\n%s", out.String())
	}

	var d bytes.Buffer
	if err := describeWorkload(&d, agentapi.WorkloadDetail{Service: &web, EndpointSlices: slices}, now); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Type:              ClusterIP", "IP:                10.96.0.1", "Port:              http  80/TCP", "TargetPort:        http/TCP", "Endpoints:         10.88.0.2:8080\n"} {
		if !strings.Contains(d.String(), line) {
			t.Errorf("describe svc: no %q in\n%s", line, d.String())
		}
	}
}

// describe of an ExternalName Service: External Name, no IP.
func TestDescribeExternalName(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.com", SessionAffinity: v1.ServiceAffinityNone}}
	var d bytes.Buffer
	if err := describeWorkload(&d, agentapi.WorkloadDetail{Service: svc}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.String(), "External Name:     db.example.com\n") || strings.Contains(d.String(), "\nIP:") {
		t.Errorf("describe svc db:\n%s", d.String())
	}
}

func TestServiceResourceNames(t *testing.T) {
	for in, want := range map[string]string{
		"svc": agentapi.ResourceService, "service": agentapi.ResourceService, "Services": agentapi.ResourceService,
		"endpointslices": agentapi.ResourceEndpointSlice, "endpointslice.discovery.k8s.io": agentapi.ResourceEndpointSlice,
	} {
		if got, ok := workloadResource(in); !ok || got != want {
			t.Errorf("%s: %q %v; want %q", in, got, ok, want)
		}
	}
	if kindLabel(agentapi.KindService) != "service" {
		t.Errorf("a Service is %q in messages; want service", kindLabel(agentapi.KindService))
	}
}
