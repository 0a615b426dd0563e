package workload

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Endpoint is one pod behind a Service, as the endpoints controller
// computes it: the pod's address, its hostname record when it sets
// hostname and subdomain = the Service, whether it is ready, and each
// Service port's target port on this pod (absent when a named targetPort
// names no port of the pod's containers).
type Endpoint struct {
	Namespace string
	PodName   string
	Addr      netip.Addr
	Hostname  string
	Ready     bool
	// Ports maps a Service port's name ("" for a single unnamed port)
	// to the pod's port number.
	Ports map[string]int32
}

// ServiceEndpoints lists the endpoints of svc among pods, by pod name: the
// running pods of its namespace its selector matches, with an address,
// not being deleted. A pod not ready is listed with Ready false (it serves
// only with publishNotReadyAddresses); a Service without selector has no
// endpoints (they would be given by hand, which berth does not read),
// nor has an ExternalName one (its name is a DNS alias).
func ServiceEndpoints(svc *v1.Service, pods []v1.Pod) []Endpoint {
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var out []Endpoint
	for i := range pods {
		pod := &pods[i]
		if pod.Namespace != svc.Namespace || pod.DeletionTimestamp != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		addr, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		ep := Endpoint{Namespace: pod.Namespace, PodName: pod.Name, Addr: addr, Ready: podReady(pod) || svc.Spec.PublishNotReadyAddresses, Ports: map[string]int32{}}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			ep.Hostname = pod.Spec.Hostname
		}
		for _, sp := range svc.Spec.Ports {
			if port, ok := TargetPort(pod, sp); ok {
				ep.Ports[sp.Name] = port
			}
		}
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PodName < out[j].PodName })
	return out
}

// ReadyEndpoints keeps the endpoints that serve.
func ReadyEndpoints(eps []Endpoint) []Endpoint {
	var out []Endpoint
	for _, ep := range eps {
		if ep.Ready {
			out = append(out, ep)
		}
	}
	return out
}

// TargetPort resolves a Service port's targetPort on pod: a number is
// itself, a name is the containerPort of that name and the port's
// protocol in the pod's containers (first match), as kube-proxy's
// FindPort.
func TargetPort(pod *v1.Pod, sp v1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.Int && tp.IntVal == 0:
		return sp.Port, sp.Port > 0
	case tp.Type == intstr.Int:
		return tp.IntVal, true
	}
	proto := sp.Protocol
	if proto == "" {
		proto = v1.ProtocolTCP
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			p := cp.Protocol
			if p == "" {
				p = v1.ProtocolTCP
			}
			if cp.Name == tp.StrVal && p == proto {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// EndpointSlices are the discovery/v1 EndpointSlices the endpointslice
// controller would write for svc: one per distinct set of resolved ports
// (named targetPorts may resolve differently per pod), named
// <svc>-<hash of the ports>, each endpoint with its Ready, Serving and
// Terminating conditions, hostname and pod reference.
func EndpointSlices(svc *v1.Service, eps []Endpoint) []discoveryv1.EndpointSlice {
	slices := map[string]*discoveryv1.EndpointSlice{}
	var order []string
	for _, ep := range eps {
		ports, key := slicePorts(svc, ep)
		s := slices[key]
		if s == nil {
			h := fnv.New32a()
			_, _ = h.Write([]byte(key)) // a hash never fails to write
			s = &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Ports: ports}
			s.Name, s.Namespace = fmt.Sprintf("%s-%05x", svc.Name, h.Sum32()&0xfffff), svc.Namespace
			s.Labels = map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}
			s.CreationTimestamp = svc.CreationTimestamp
			slices[key] = s
			order = append(order, key)
		}
		if ep.Addr.Is6() {
			s.AddressType = discoveryv1.AddressTypeIPv6
		}
		e := discoveryv1.Endpoint{
			Addresses:  []string{ep.Addr.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ep.Ready, Serving: &ep.Ready, Terminating: new(bool)},
			TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: ep.Namespace, Name: ep.PodName},
		}
		if ep.Hostname != "" {
			e.Hostname = &ep.Hostname
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	out := make([]discoveryv1.EndpointSlice, 0, len(order))
	for _, k := range order {
		out = append(out, *slices[k])
	}
	return out
}

// slicePorts are the ports an endpoint serves, and a key naming the set.
func slicePorts(svc *v1.Service, ep Endpoint) ([]discoveryv1.EndpointPort, string) {
	var ports []discoveryv1.EndpointPort
	key := ""
	for _, sp := range svc.Spec.Ports {
		p, ok := ep.Ports[sp.Name]
		if !ok {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		ports = append(ports, discoveryv1.EndpointPort{Name: &name, Port: &p, Protocol: &proto})
		key += fmt.Sprintf("%s/%s/%d,", sp.Name, sp.Protocol, p)
	}
	return ports, key
}
