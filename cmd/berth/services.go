package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// serviceResource maps what kubectl accepts for Services and Endpoints.
func serviceResource(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "svc", "service", "services":
		return agentapi.ResourceService, true
	case "ep", "endpoints":
		return agentapi.ResourceEndpoints, true
	}
	return "", false
}

func isServiceResource(resource string) bool {
	return resource == agentapi.ResourceService || resource == agentapi.ResourceEndpoints
}

// selectServices adds the Service or Endpoints called name to out.
func selectServices(list agentapi.WorkloadList, name string, out *agentapi.WorkloadList) bool {
	found := false
	for _, s := range list.Services {
		if s.Name == name {
			out.Services, found = append(out.Services, s), true
		}
	}
	for _, e := range list.Endpoints {
		if e.Name == name {
			out.Endpoints, found = append(out.Endpoints, e), true
		}
	}
	return found
}

// serviceObjects are the Services and Endpoints for -o json|yaml.
func serviceObjects(list agentapi.WorkloadList) []any {
	var out []any
	for i := range list.Services {
		s := &list.Services[i]
		s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
		out = append(out, s)
	}
	for i := range list.Endpoints {
		e := &list.Endpoints[i]
		e.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"}
		out = append(out, e)
	}
	return out
}

// writeServiceTable prints kubectl's columns: NAME TYPE CLUSTER-IP
// EXTERNAL-IP PORT(S) AGE (wide: SELECTOR) for Services, NAME ENDPOINTS
// AGE for Endpoints.
func writeServiceTable(w io.Writer, list agentapi.WorkloadList, resource string, withNamespace, wide bool, now time.Time) error {
	if len(list.Services)+len(list.Endpoints) == 0 {
		fmt.Fprintln(os.Stderr, "No resources found.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tTYPE\tCLUSTER-IP\tEXTERNAL-IP\tPORT(S)\tAGE"
	if resource == agentapi.ResourceEndpoints {
		header = "NAME\tENDPOINTS\tAGE"
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
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", s.Spec.Type, s.Spec.ClusterIP, externalIPs(s), servicePorts(s), age(s.CreationTimestamp.Time, now))
		if wide {
			line += "\t" + orNone(labels.Set(s.Spec.Selector).String())
		}
		row(&s.ObjectMeta, line)
	}
	for i := range list.Endpoints {
		e := &list.Endpoints[i]
		row(&e.ObjectMeta, endpointsColumn(e)+"\t"+age(e.CreationTimestamp.Time, now))
	}
	return tw.Flush()
}

// externalIPs is the EXTERNAL-IP column: the load balancer's ingress
// (<pending> until it has one) and spec.externalIPs.
func externalIPs(s *v1.Service) string {
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

// endpointsColumn lists ready addresses with their ports, the first three
// then "+ N more...", as kubectl.
func endpointsColumn(e *v1.Endpoints) string {
	var all []string
	for _, s := range e.Subsets {
		for _, a := range s.Addresses {
			if len(s.Ports) == 0 {
				all = append(all, a.IP)
			}
			for _, p := range s.Ports {
				all = append(all, a.IP+":"+strconv.Itoa(int(p.Port)))
			}
		}
	}
	if len(all) > 3 {
		return strings.Join(all[:3], ",") + fmt.Sprintf(" + %d more...", len(all)-3)
	}
	return orNone(strings.Join(all, ","))
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
	d.line(0, "IP", "%s", s.Spec.ClusterIP)
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
		d.line(0, "Endpoints", "%s", portEndpoints(detail.Endpoints, p.Name))
	}
	if len(s.Spec.Ports) == 0 {
		d.line(0, "Endpoints", "%s", endpointsColumn(detail.Endpoints))
	}
	d.line(0, "Session Affinity", "%s", s.Spec.SessionAffinity)
}

func orUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

// portEndpoints lists the ready addresses of one Service port.
func portEndpoints(e *v1.Endpoints, port string) string {
	if e == nil {
		return "<none>"
	}
	var out []string
	for _, s := range e.Subsets {
		for _, p := range s.Ports {
			if p.Name != port {
				continue
			}
			for _, a := range s.Addresses {
				out = append(out, a.IP+":"+strconv.Itoa(int(p.Port)))
			}
		}
	}
	return orNone(strings.Join(out, ","))
}
