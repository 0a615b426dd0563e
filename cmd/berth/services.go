package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// serviceResource maps what kubectl accepts for Services and
// EndpointSlices.
func serviceResource(s string) (string, bool) {
	switch strings.TrimSuffix(strings.ToLower(s), ".discovery.k8s.io") {
	case "svc", "service", "services":
		return agentapi.ResourceService, true
	case "endpointslice", "endpointslices":
		return agentapi.ResourceEndpointSlice, true
	}
	return "", false
}

func isServiceResource(resource string) bool {
	return resource == agentapi.ResourceService || resource == agentapi.ResourceEndpointSlice
}

// selectServices adds the Service or EndpointSlice called name to out.
func selectServices(list agentapi.WorkloadList, name string, out *agentapi.WorkloadList) bool {
	found := false
	for _, s := range list.Services {
		if s.Name == name {
			out.Services, found = append(out.Services, s), true
		}
	}
	for _, e := range list.EndpointSlices {
		if e.Name == name {
			out.EndpointSlices, found = append(out.EndpointSlices, e), true
		}
	}
	return found
}

// serviceObjects are the Services and EndpointSlices for -o json|yaml.
func serviceObjects(list agentapi.WorkloadList) []any {
	var out []any
	for i := range list.Services {
		s := &list.Services[i]
		s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
		out = append(out, s)
	}
	for i := range list.EndpointSlices {
		e := &list.EndpointSlices[i]
		e.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
		out = append(out, e)
	}
	return out
}

// writeServiceTable prints kubectl's columns: NAME TYPE CLUSTER-IP
// EXTERNAL-IP PORT(S) AGE (wide: SELECTOR) for Services, NAME ADDRESSTYPE
// PORTS ENDPOINTS AGE for EndpointSlices.
func writeServiceTable(w io.Writer, list agentapi.WorkloadList, resource string, withNamespace, wide bool, now time.Time) error {
	if len(list.Services)+len(list.EndpointSlices) == 0 {
		fmt.Fprintln(os.Stderr, "No resources found.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tTYPE\tCLUSTER-IP\tEXTERNAL-IP\tPORT(S)\tAGE"
	if resource == agentapi.ResourceEndpointSlice {
		header = "NAME\tADDRESSTYPE\tPORTS\tENDPOINTS\tAGE"
	} else if wide {
		header += "\tSELECTOR"
	}
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	row := func(m *metav1.ObjectMeta, cells string) {
		line := m.Name + "\t" + cells
		if withNamespace {
			line = m.Namespace + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	for i := range list.Services {
		s := &list.Services[i]
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", s.Spec.Type, orNone(s.Spec.ClusterIP), externalIPs(s), servicePorts(s), age(s.CreationTimestamp.Time, now))
		if wide {
			line += "\t" + orNone(labels.Set(s.Spec.Selector).String())
		}
		row(&s.ObjectMeta, line)
	}
	for i := range list.EndpointSlices {
		e := &list.EndpointSlices[i]
		row(&e.ObjectMeta, fmt.Sprintf("%s\t%s\t%s\t%s", e.AddressType, slicePorts(e), sliceEndpoints(e), age(e.CreationTimestamp.Time, now)))
	}
	return tw.Flush()
}

// externalIPs is the EXTERNAL-IP column: the load balancer's ingress
// (<pending> until it has one) and spec.externalIPs; an ExternalName
// Service's externalName.
func externalIPs(s *v1.Service) string {
	if s.Spec.Type == v1.ServiceTypeExternalName {
		return s.Spec.ExternalName
	}
	ips := append([]string(nil), s.Spec.ExternalIPs...)
	if s.Spec.Type == v1.ServiceTypeLoadBalancer {
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		if len(ips) == 0 {
			return "<pending>"
		}
	}
	return orNone(strings.Join(ips, ","))
}

// servicePorts is PORT(S): 80/TCP, 80:30080/TCP with a nodePort.
func servicePorts(s *v1.Service) string {
	var out []string
	for _, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.NodePort != 0 {
			port += ":" + strconv.Itoa(int(p.NodePort))
		}
		out = append(out, port+"/"+string(p.Protocol))
	}
	return orNone(strings.Join(out, ","))
}

// slicePorts is an EndpointSlice's PORTS column.
func slicePorts(e *discoveryv1.EndpointSlice) string {
	var out []string
	for _, p := range e.Ports {
		if p.Port != nil {
			out = append(out, strconv.Itoa(int(*p.Port)))
		}
	}
	return orUnsetList(out)
}

// sliceEndpoints is the ENDPOINTS column: the addresses, the first three
// then "+ N more...", as kubectl.
func sliceEndpoints(e *discoveryv1.EndpointSlice) string {
	var all []string
	for _, ep := range e.Endpoints {
		all = append(all, ep.Addresses...)
	}
	if len(all) > 3 {
		return strings.Join(all[:3], ",") + fmt.Sprintf(" + %d more...", len(all)-3)
	}
	return orUnsetList(all)
}

func orUnsetList(l []string) string {
	if len(l) == 0 {
		return "<unset>"
	}
	return strings.Join(l, ",")
}

// describeService writes kubectl describe's view of a Service.
func describeService(d describer, detail agentapi.WorkloadDetail) {
	s := detail.Service
	d.line(0, "Name", "%s", s.Name)
	d.line(0, "Namespace", "%s", s.Namespace)
	d.line(0, "Labels", "%s", orNone(joinMap(s.Labels, "\n\t")))
	d.line(0, "Annotations", "%s", orNone(joinMap(s.Annotations, "\n\t")))
	d.line(0, "Selector", "%s", orNone(labels.Set(s.Spec.Selector).String()))
	d.line(0, "Type", "%s", s.Spec.Type)
	if s.Spec.ClusterIP != "" {
		d.line(0, "IP", "%s", s.Spec.ClusterIP)
	}
	if len(s.Spec.ExternalIPs) > 0 {
		d.line(0, "External IPs", "%s", strings.Join(s.Spec.ExternalIPs, ","))
	}
	if s.Spec.ExternalName != "" {
		d.line(0, "External Name", "%s", s.Spec.ExternalName)
	}
	if s.Spec.Type == v1.ServiceTypeLoadBalancer {
		d.line(0, "LoadBalancer Ingress", "%s", externalIPs(s))
	}
	for _, p := range s.Spec.Ports {
		name := orUnset(p.Name)
		d.line(0, "Port", "%s  %d/%s", name, p.Port, p.Protocol)
		d.line(0, "TargetPort", "%s/%s", p.TargetPort.String(), p.Protocol)
		if p.NodePort != 0 {
			d.line(0, "NodePort", "%s  %d/%s", name, p.NodePort, p.Protocol)
		}
		d.line(0, "Endpoints", "%s", portEndpoints(detail.EndpointSlices, p.Name))
	}
	d.line(0, "Session Affinity", "%s", s.Spec.SessionAffinity)
}

func orUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

// portEndpoints lists the ready endpoints of one Service port, as
// kubectl describe: address:port.
func portEndpoints(slices []discoveryv1.EndpointSlice, port string) string {
	var out []string
	for _, s := range slices {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != port || p.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready == nil || !*ep.Conditions.Ready {
					continue
				}
				for _, a := range ep.Addresses {
					out = append(out, net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	return orNone(strings.Join(out, ","))
}
