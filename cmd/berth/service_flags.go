package main

import (
	"fmt"
	"net/netip"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// serviceFlags are the Services' settings, with kube-apiserver's and
// kubelet's names, on `berth serve` and `berth agent`.
type serviceFlags struct {
	ipRange, clusterDNS, domain, iface, nodePortAddress string
	upstream                                            []string
}

func (f *serviceFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.ipRange, "service-cluster-ip-range", workload.DefaultServiceRange.Prefix.String(), "IPv4 CIDR the Services' ClusterIPs come from")
	fs.StringVar(&f.clusterDNS, "cluster-dns", "", "address of the cluster DNS server the agent runs, in ClusterFirst pods' resolv.conf (default: the range's 10th address, 10.96.0.10)")
	fs.StringVar(&f.domain, "cluster-domain", agent.DefaultClusterDomain, "the cluster's DNS domain")
	fs.StringVar(&f.iface, "service-interface", agent.DefaultServiceInterface, "network interface the agent makes for ClusterIPs and the cluster DNS address (removed with the last Service)")
	fs.StringVar(&f.nodePortAddress, "nodeport-address", "0.0.0.0", "host address NodePort and LoadBalancer ports listen on")
	fs.StringSliceVar(&f.upstream, "cluster-dns-upstream", nil, "servers (host or host:port) the cluster DNS forwards other names to (default: the host's resolv.conf's)")
}

// config is the agent's Services configuration; errors name the flag.
func (f *serviceFlags) config() (agent.ServicesConfig, error) {
	var c agent.ServicesConfig
	r, err := workload.ParseServiceRange(f.ipRange)
	if err != nil {
		return c, fmt.Errorf("--service-cluster-ip-range: %w", err)
	}
	c.Range, c.Domain, c.Interface, c.Upstream = r, f.domain, f.iface, f.upstream
	if f.clusterDNS != "" {
		if c.ClusterDNS, err = netip.ParseAddr(f.clusterDNS); err != nil || !c.ClusterDNS.Is4() {
			return c, fmt.Errorf("--cluster-dns %q: want an IPv4 address", f.clusterDNS)
		}
	}
	if c.NodePortAddress, err = netip.ParseAddr(f.nodePortAddress); err != nil {
		return c, fmt.Errorf("--nodeport-address %q: %w", f.nodePortAddress, err)
	}
	if len(f.iface) == 0 || len(f.iface) > 15 {
		return c, fmt.Errorf("--service-interface %q: want 1 to 15 characters", f.iface)
	}
	return c, nil
}
