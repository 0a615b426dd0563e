package agent

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/berth-dev/berth/internal/agent/svcnet"
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

// CheckHostAddrs refuses a service range or cluster DNS address that
// holds an address of one of the host's interfaces (host: addresses by
// interface name) other than the service link: the Services' table would
// guard the ClusterIPs, and a ClusterIP handed out equal to the host's
// address would take it from the host. Errors name the flag.
func (c ServicesConfig) CheckHostAddrs(host map[string][]netip.Addr) error {
	c = c.withDefaults()
	names := slices.Sorted(maps.Keys(host))
	for _, name := range names {
		if name == c.Interface {
			continue
		}
		for _, a := range host[name] {
			a = a.Unmap()
			var what string
			switch {
			case c.Range.Prefix.Contains(a):
				what = fmt.Sprintf("--service-cluster-ip-range %s holds %s,", c.Range.Prefix, a)
			case a == c.ClusterDNS:
				what = fmt.Sprintf("--cluster-dns %s is", a)
			default:
				continue
			}
			return fmt.Errorf("%s an address of the host's interface %s: the Services would take it from the host; "+
				"choose a range (and --cluster-dns) outside the host's networks", what, name)
		}
	}
	return nil
}

// HostAddrs are the addresses of the host's interfaces, by name. The
// service link of another agent (svcnet's alias; one run with another
// --service-interface, as the tests run one per runtime side by side)
// holds ClusterIPs, not the host's network: it is left out, and its
// table guards exactly its own addresses.
func HostAddrs() (map[string][]netip.Addr, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("the host's interfaces: %w", err)
	}
	out := map[string][]netip.Addr{}
	for _, ifc := range ifaces {
		if svcnet.Exists(ifc.Name) {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("the addresses of interface %s: %w", ifc.Name, err)
		}
		for _, x := range addrs {
			if n, ok := x.(*net.IPNet); ok {
				if a, ok := netip.AddrFromSlice(n.IP); ok {
					out[ifc.Name] = append(out[ifc.Name], a.Unmap())
				}
			}
		}
	}
	return out, nil
}
