package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/errdefs"
)

// serviceObj is one Service the agent keeps (guarded by a.mu), with the
// endpoints its last sync found.
type serviceObj struct {
	svc       *v1.Service
	source    string
	events    *eventLog
	endpoints []workload.Endpoint
	problem   string // the last host problem reported as an event
}

func (o *serviceObj) key() string { return o.svc.Namespace + "/" + o.svc.Name }

func (o *serviceObj) record() workloadstore.Record {
	return workloadstore.Record{Kind: workloadstore.KindService, Source: o.source, Service: o.svc}
}

func (o *serviceObj) clusterIP() netip.Addr {
	a, err := netip.ParseAddr(o.svc.Spec.ClusterIP)
	if err != nil {
		return netip.Addr{}
	}
	return a
}

// sortedServicesLocked lists the Services by namespace and name.
func (a *Agent) sortedServicesLocked() []*serviceObj {
	out := make([]*serviceObj, 0, len(a.services))
	for _, o := range a.services {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// loadServicesLocked reads the saved Services back at recovery, before
// the pods' workers start (what the store could not read,
// loadWorkloadsLocked logs), and brings the host side back: the
// interface is adopted, or removed when no Service is left.
func (a *Agent) loadServicesLocked() {
	records, _ := a.workloadStore.Load()
	for _, r := range records {
		if r.Service != nil {
			o := &serviceObj{svc: r.Service, source: r.Source, events: newEventLog(a.deps.clock.Now)}
			a.services[o.key()] = o
		}
	}
	if len(a.services) == 0 {
		// The last Service went while the agent was stopping.
		a.removeServiceLeftoversLocked()
		return
	}
	a.syncServicesLocked()
}

// removeServiceLeftoversLocked removes the interface and the table a
// previous agent left without Services.
func (a *Agent) removeServiceLeftoversLocked() {
	if a.link().Exists(a.cfg.Services.Interface) {
		if err := a.link().Remove(a.cfg.Services.Interface); err != nil {
			a.log.Error("recover: removing the service interface", "error", err)
		}
	}
	table, err := a.newServiceTable()
	if err != nil {
		return // no nft: no table either
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	if ok, err := table.Exists(ctx); err != nil || !ok {
		return
	}
	if err := table.Remove(ctx); err != nil {
		a.log.Error("recover: removing the Services' nftables table", "error", err)
	}
}

// applyServicesLocked creates or updates the bundle's Services: a new one
// gets its ClusterIP and nodePorts; an update keeps them (a different
// clusterIP is refused: the field is immutable).
func (a *Agent) applyServicesLocked(b *manifest.Bundle) ([]agentapi.ApplyResult, error) {
	var results []agentapi.ApplyResult
	for _, s := range b.Services {
		in := s.DeepCopy()
		in.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: agentapi.KindService}
		r, err := a.applyServiceLocked(in, s.Source)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	if len(b.Services) > 0 {
		a.syncServicesLocked()
	}
	return results, nil
}

func (a *Agent) applyServiceLocked(in *v1.Service, source string) (agentapi.ApplyResult, error) {
	result := agentapi.ApplyResult{Kind: agentapi.KindService, Namespace: in.Namespace, Name: in.Name, Outcome: agentapi.OutcomeCreated}
	cur := a.services[in.Namespace+"/"+in.Name]
	if cur != nil {
		if err := keepAllocations(in, cur.svc); err != nil {
			return result, serviceInvalid(source, in, err)
		}
		in.UID, in.CreationTimestamp, in.Generation = cur.svc.UID, cur.svc.CreationTimestamp, cur.svc.Generation
		result.UID, result.Outcome = string(in.UID), agentapi.OutcomeConfigured
		if apiequality.Semantic.DeepEqual(in.Spec, cur.svc.Spec) && apiequality.Semantic.DeepEqual(in.Labels, cur.svc.Labels) &&
			apiequality.Semantic.DeepEqual(in.Annotations, cur.svc.Annotations) {
			result.Outcome = agentapi.OutcomeUnchanged
			return result, nil
		}
	} else {
		in.UID, in.Generation, in.CreationTimestamp = newUID(), 1, metav1.NewTime(a.deps.clock.Now())
		result.UID = string(in.UID)
	}
	if err := a.allocateLocked(in); err != nil {
		return result, serviceInvalid(source, in, err)
	}
	o := &serviceObj{svc: in, source: source, events: newEventLog(a.deps.clock.Now)}
	if cur != nil {
		o.events, o.endpoints = cur.events, cur.endpoints
	}
	if len(in.Spec.ExternalIPs) > 0 && (cur == nil || !slices.Equal(in.Spec.ExternalIPs, cur.svc.Spec.ExternalIPs)) {
		o.events.record(agentapi.EventWarning, "ExternalIPsNotServed", "",
			"spec.externalIPs "+strings.Join(in.Spec.ExternalIPs, ",")+" are not served: berth's proxy listens on the ClusterIP, nodePorts and LoadBalancer ports only")
	}
	if err := a.workloadStore.Save(o.record()); err != nil {
		return result, err
	}
	a.services[o.key()] = o
	return result, nil
}

func serviceInvalid(source string, s *v1.Service, err *field.Error) error {
	p := manifest.Problem{Source: source, Object: "Service " + s.Namespace + "/" + s.Name, Err: err}
	return fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, &manifest.InvalidError{Problems: []manifest.Problem{p}})
}

// keepAllocations carries the current ClusterIP and nodePorts over to an
// update that does not give them. As the API server, a change to or from
// ExternalName releases or allocates the ClusterIP instead.
func keepAllocations(in, cur *v1.Service) *field.Error {
	switch {
	case in.Spec.Type == v1.ServiceTypeExternalName || cur.Spec.Type == v1.ServiceTypeExternalName:
	case in.Spec.ClusterIP == "":
		in.Spec.ClusterIP, in.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs
	case in.Spec.ClusterIP != cur.Spec.ClusterIP:
		return field.Invalid(field.NewPath("spec", "clusterIP"), in.Spec.ClusterIP, "field is immutable")
	}
	for i := range in.Spec.Ports {
		p := &in.Spec.Ports[i]
		for _, c := range cur.Spec.Ports {
			if p.NodePort == 0 && c.Name == p.Name && c.Protocol == p.Protocol {
				p.NodePort = c.NodePort
			}
		}
	}
	return nil
}

// allocateLocked gives s its ClusterIP (unless headless or ExternalName)
// and, for a NodePort or LoadBalancer Service, the nodePorts it lacks;
// other types have none.
func (a *Agent) allocateLocked(s *v1.Service) *field.Error {
	ips, ports := a.allocatedLocked(s.Namespace + "/" + s.Name)
	switch {
	case s.Spec.Type == v1.ServiceTypeExternalName:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
	case s.Spec.ClusterIP != v1.ClusterIPNone:
		ip, err := a.cfg.Services.Range.AllocateClusterIP(s.Spec.ClusterIP, ips)
		if err != nil {
			return field.Invalid(field.NewPath("spec", "clusterIP"), s.Spec.ClusterIP, err.Error())
		}
		s.Spec.ClusterIP, s.Spec.ClusterIPs = ip.String(), []string{ip.String()}
	default:
		s.Spec.ClusterIPs = []string{v1.ClusterIPNone}
	}
	nodePorts := s.Spec.Type == v1.ServiceTypeNodePort || s.Spec.Type == v1.ServiceTypeLoadBalancer
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if !nodePorts {
			p.NodePort = 0
			continue
		}
		port, err := workload.AllocateNodePort(p.NodePort, manifest.NodePortMin, manifest.NodePortMax, ports)
		if err != nil {
			return field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, err.Error())
		}
		p.NodePort, ports[port] = port, true
	}
	return nil
}

// allocatedLocked lists the ClusterIPs and nodePorts the other Services
// hold (and the DNS address).
func (a *Agent) allocatedLocked(except string) (map[netip.Addr]bool, map[int32]bool) {
	ips := map[netip.Addr]bool{a.cfg.Services.ClusterDNS: true}
	ports := map[int32]bool{}
	for key, o := range a.services {
		if key == except {
			continue
		}
		if ip := o.clusterIP(); ip.IsValid() {
			ips[ip] = true
		}
		for _, p := range o.svc.Spec.Ports {
			if p.NodePort != 0 {
				ports[p.NodePort] = true
			}
		}
	}
	return ips, ports
}
