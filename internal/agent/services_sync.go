package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/clusterdns"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/svcproxy"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// reconcileServices runs syncServicesLocked (every controller pass:
// readiness changes reach the endpoints within a second).
func (a *Agent) reconcileServices() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.stopping {
		a.syncServicesLocked()
	}
}

// syncServicesLocked computes every Service's endpoints from the pods and
// brings the host up to date: the interface's addresses, the DNS records,
// the proxy's listeners. With no Service left, all of it goes.
func (a *Agent) syncServicesLocked() {
	if len(a.services) == 0 {
		if a.svcHost != nil {
			if err := a.svcHost.down(); err != nil {
				a.log.Error("services: removing the host side", "error", err)
			} else {
				a.svcHost = nil
			}
		}
		a.deps.clusterDNS.Store(nil)
		return
	}
	if a.svcHost == nil {
		if err := a.checkServicesHost(); err != nil {
			a.reportServiceProblems(func(*serviceObj) string { return "FailedToSetUpHost: " + err.Error() })
			return
		}
		table, err := a.svcTable.table(a.deps.clock.Now(), a.newServiceTable)
		if err != nil {
			a.reportServiceProblems(func(*serviceObj) string { return "FailedToSetUpHost: " + err.Error() })
			return
		}
		a.findLeftoverTablesLocked()
		a.svcHost = newServiceHost(a.cfg.Services, a.link(), table, a.deps.svcPods, a.deps.node.dns.Servers, a.log.With("component", "services"))
	}
	pods := make([]v1.Pod, 0, len(a.workers))
	live := make(map[string]bool, len(a.workers))
	for uid, w := range a.workers {
		pods = append(pods, w.view())
		live[uid] = true
	}
	podAddrs := dnsPodAddrs(pods)
	var dnsServices []clusterdns.Service
	var rules []svcproxy.Rule
	var addrs []netip.Addr
	for _, o := range a.sortedServicesLocked() {
		o.endpoints = workload.ServiceEndpoints(o.svc, pods)
		ready := workload.ReadyEndpoints(o.endpoints)
		dnsServices = append(dnsServices, dnsService(o, ready))
		rules = append(rules, a.proxyRules(o, ready)...)
		if ip := o.clusterIP(); ip.IsValid() {
			addrs = append(addrs, ip)
		}
		a.setLoadBalancerStatus(o)
	}
	a.removeLeftoverTablesLocked()
	if err := a.svcHost.up(podAddrs, live, addrs); err != nil {
		a.reportServiceProblems(func(*serviceObj) string { return "FailedToSetUpHost: " + err.Error() })
		a.deps.clusterDNS.Store(nil)
		return
	}
	a.deps.clusterDNS.Store(&podspec.ClusterDNS{Servers: []string{a.cfg.Services.ClusterDNS.String()}, Domain: a.cfg.Services.Domain})
	a.svcHost.dns.Update(clusterdns.NewTable(a.cfg.Services.Domain, dnsServices, dnsPods(pods)))
	err := a.svcHost.proxy.Update(rules)
	if perr := a.svcHost.program(podAddrs, live); perr != nil {
		a.reportServiceProblems(func(*serviceObj) string { return "FailedToSetUpHost: " + perr.Error() })
		return
	}
	a.reportServiceProblems(func(o *serviceObj) string { return proxyProblem(o, err) })
}

// dnsService is what the DNS server answers for a Service.
func dnsService(o *serviceObj, ready []workload.Endpoint) clusterdns.Service {
	s := clusterdns.Service{Namespace: o.svc.Namespace, Name: o.svc.Name, ClusterIP: o.clusterIP()}
	if o.svc.Spec.Type == v1.ServiceTypeExternalName {
		s.ExternalName = o.svc.Spec.ExternalName
	}
	for _, p := range o.svc.Spec.Ports {
		s.Ports = append(s.Ports, clusterdns.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	for _, ep := range ready {
		s.Endpoints = append(s.Endpoints, clusterdns.Endpoint{Addr: ep.Addr, Hostname: ep.Hostname})
	}
	return s
}

func dnsPods(pods []v1.Pod) []clusterdns.Pod {
	var out []clusterdns.Pod
	for _, p := range pods {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil && !p.Spec.HostNetwork {
			out = append(out, clusterdns.Pod{Namespace: p.Namespace, Addr: a})
		}
	}
	return out
}

// dnsPodAddrs are the pods' addresses (a hostNetwork pod has the host's:
// it comes in on lo).
func dnsPodAddrs(pods []v1.Pod) []netip.Addr {
	var out []netip.Addr
	for _, p := range pods {
		if p.Spec.HostNetwork {
			continue
		}
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				out = append(out, a)
			}
		}
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// proxyRules are a Service's listeners: ClusterIP:port (unless headless),
// and on the host nodePort (NodePort, LoadBalancer) and port
// (LoadBalancer, as k3s's ServiceLB), each spreading over the ready
// endpoints' target ports. SCTP is not proxied.
func (a *Agent) proxyRules(o *serviceObj, ready []workload.Endpoint) []svcproxy.Rule {
	var rules []svcproxy.Rule
	host := a.cfg.Services.NodePortAddress
	for _, p := range o.svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
			continue
		}
		var backends []netip.AddrPort
		for _, ep := range ready {
			if port, ok := ep.Ports[p.Name]; ok {
				backends = append(backends, netip.AddrPortFrom(ep.Addr, uint16(port)))
			}
		}
		rule := func(listen netip.AddrPort, what string) {
			rules = append(rules, svcproxy.Rule{Name: fmt.Sprintf("%s %s %d (%s)", o.key(), p.Protocol, p.Port, what),
				Protocol: string(p.Protocol), Listen: listen, Backends: backends,
				Affinity: affinity(o.svc), AffinityGroup: fmt.Sprintf("%s %s %d", o.key(), p.Protocol, p.Port),
				Service: o.key()})
		}
		if ip := o.clusterIP(); ip.IsValid() {
			rule(netip.AddrPortFrom(ip, uint16(p.Port)), "ClusterIP")
			rules[len(rules)-1].Redirected = true // reached through the table's DNAT (svcnft)
		}
		if p.NodePort != 0 {
			rule(netip.AddrPortFrom(host, uint16(p.NodePort)), "NodePort")
		}
		if o.svc.Spec.Type == v1.ServiceTypeLoadBalancer {
			rule(netip.AddrPortFrom(host, uint16(p.Port)), "LoadBalancer")
		}
	}
	return rules
}

// affinity is how long a ClientIP session affinity keeps a client on its
// endpoint; 0 for none.
func affinity(s *v1.Service) time.Duration {
	c := s.Spec.SessionAffinityConfig
	if s.Spec.SessionAffinity != v1.ServiceAffinityClientIP || c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
}

// setLoadBalancerStatus gives a LoadBalancer Service the node's address
// as its ingress, as k3s's ServiceLB does.
func (a *Agent) setLoadBalancerStatus(o *serviceObj) {
	if o.svc.Spec.Type != v1.ServiceTypeLoadBalancer {
		o.svc.Status.LoadBalancer = v1.LoadBalancerStatus{}
		return
	}
	var ingress []v1.LoadBalancerIngress
	for _, ip := range a.deps.node.hostIPs {
		ingress = append(ingress, v1.LoadBalancerIngress{IP: ip})
	}
	o.svc.Status.LoadBalancer.Ingress = ingress
}

// proxyProblem is the part of the proxy's error about o's listeners.
func proxyProblem(o *serviceObj, err error) string {
	var many interface{ Unwrap() []error }
	if err == nil {
		return ""
	}
	errs := []error{err}
	if errors.As(err, &many) {
		errs = many.Unwrap()
	}
	var mine []string
	for _, e := range errs {
		if strings.HasPrefix(e.Error(), o.key()+" ") {
			mine = append(mine, e.Error())
		}
	}
	if len(mine) == 0 {
		return ""
	}
	return "FailedToListen: " + strings.Join(mine, "; ")
}

// reportServiceProblems records a Warning event on each Service whose
// problem ("Reason: message", "" for none) is new.
func (a *Agent) reportServiceProblems(problem func(*serviceObj) string) {
	for _, o := range a.sortedServicesLocked() {
		p := problem(o)
		if p == o.problem {
			continue
		}
		o.problem = p
		if p == "" {
			continue
		}
		reason, message, _ := strings.Cut(p, ": ")
		o.events.record(agentapi.EventWarning, reason, "", message)
		a.log.Warn("service: "+message, "service", o.key(), "reason", reason)
	}
}

// checkServicesHost refuses to set up the Services' host side while the
// service range or the cluster DNS address holds one of the host's own
// addresses (ServicesConfig.CheckHostAddrs): the Services then fail
// closed with a FailedToSetUpHost event naming the flag, and everything
// else of the agent runs (and the check runs again at the next sync).
func (a *Agent) checkServicesHost() error {
	list := a.hostAddrs
	if list == nil {
		list = HostAddrs
	}
	host, err := list()
	if err != nil {
		return fmt.Errorf("checking --service-cluster-ip-range against %w", err)
	}
	return a.cfg.Services.CheckHostAddrs(host)
}
