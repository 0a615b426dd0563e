package agent

import (
	"net/netip"

	"github.com/berth-dev/berth/internal/agent/svcproxy"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// ServicesConfig configures the agent's Services: kube-apiserver's
// --service-cluster-ip-range and kubelet's --cluster-dns and
// --cluster-domain, and where the host side lives.
type ServicesConfig struct {
	// Range is where ClusterIPs come from; default kubeadm's 10.96.0.0/12.
	Range workload.ServiceRange
	// ClusterDNS is the cluster DNS server's address (on Interface);
	// default the range's 10th address (10.96.0.10).
	ClusterDNS netip.Addr
	// Domain is the cluster domain; default cluster.local.
	Domain string
	// Interface is the link the agent owns for the ClusterIPs and the
	// DNS address (package svcnet); default berth-svc0.
	Interface string
	// DNSPort is the port clients ask the DNS address on (53 in pods'
	// resolv.conf); the server listens at a port of the kernel's, which
	// the Services' table sends DNSPort to. Default 53.
	DNSPort int
	// Upstream are the servers (host or host:port) names outside the
	// cluster domain are forwarded to; default the host's resolv.conf's.
	Upstream []string
	// NodePortAddress is where NodePorts and LoadBalancer ports listen;
	// default every address of the host (0.0.0.0).
	NodePortAddress netip.Addr
	// Proxy bounds the connections and flows the proxy holds (package
	// svcproxy; zero fields take its defaults).
	Proxy svcproxy.Limits
	// DNSMaxForwards bounds the questions the cluster DNS forwards at
	// once; default clusterdns.DefaultMaxForwards.
	DNSMaxForwards int
}

// Defaults of ServicesConfig.
const (
	DefaultClusterDomain    = "cluster.local"
	DefaultServiceInterface = "berth-svc0"
)

func (c ServicesConfig) withDefaults() ServicesConfig {
	if !c.Range.Prefix.IsValid() {
		c.Range = workload.DefaultServiceRange
	}
	if !c.ClusterDNS.IsValid() {
		c.ClusterDNS = c.Range.DNSAddr()
	}
	if c.Domain == "" {
		c.Domain = DefaultClusterDomain
	}
	if c.Interface == "" {
		c.Interface = DefaultServiceInterface
	}
	if c.DNSPort == 0 {
		c.DNSPort = 53
	}
	if !c.NodePortAddress.IsValid() {
		c.NodePortAddress = netip.IPv4Unspecified()
	}
	return c
}
