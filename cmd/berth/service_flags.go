package main

import (
	"fmt"
	"net/netip"
	"regexp"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/clusterdns"
	"github.com/berth-dev/berth/internal/agent/svcproxy"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// serviceFlags are the Services' settings, with kube-apiserver's and
// kubelet's names, on `berth serve` and `berth agent`.
// serviceInterfaceName is a link name that is an nft identifier too.
var serviceInterfaceName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,14}$`)

type serviceFlags struct {
	ipRange, clusterDNS, domain, iface, nodePortAddress string
	upstream                                            []string
	proxy                                               svcproxy.Limits
	dnsMaxForwards                                      int
}

func (f *serviceFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.ipRange, "service-cluster-ip-range", workload.DefaultServiceRange.Prefix.String(), "IPv4 CIDR the Services' ClusterIPs come from")
	fs.StringVar(&f.clusterDNS, "cluster-dns", "", "address of the cluster DNS server the agent runs, in ClusterFirst pods' resolv.conf (default: the range's 10th address, 10.96.0.10)")
	fs.StringVar(&f.domain, "cluster-domain", agent.DefaultClusterDomain, "the cluster's DNS domain")
	fs.StringVar(&f.iface, "service-interface", agent.DefaultServiceInterface, "network interface the agent makes for ClusterIPs and the cluster DNS address, and name of its nftables table (ip NAME) that sends the Services' ports to its listeners (both removed with the last Service)")
	fs.StringVar(&f.nodePortAddress, "nodeport-address", "0.0.0.0", "host address NodePort and LoadBalancer ports listen on")
	fs.StringSliceVar(&f.upstream, "cluster-dns-upstream", nil, "servers (host or host:port) the cluster DNS forwards other names to (default: the host's resolv.conf's)")
	f.bindLimits(fs)
}

// bindLimits binds the flags of the Services' bounds (svcproxy.Limits and
// the cluster DNS's forwards).
func (f *serviceFlags) bindLimits(fs *pflag.FlagSet) {
	fs.IntVar(&f.proxy.MaxConns, "service-max-connections", 0, fmt.Sprintf("TCP connections and UDP flows the service proxy holds at once, all Services together; beyond, a new connection is reset and a new flow ends one of its port's or is dropped (default %d, or a quarter of the descriptor limit when less)", svcproxy.DefaultMaxConns))
	fs.IntVar(&f.proxy.MaxConnsPerService, "service-max-connections-per-service", svcproxy.DefaultMaxConnsPerService, "TCP connections the service proxy holds at once for one Service, its ports together; beyond, a new one is reset")
	fs.IntVar(&f.proxy.MaxConnsPerSource, "service-max-connections-per-source", svcproxy.DefaultMaxConnsPerSource, "TCP connections the service proxy holds at once from one client IP to one Service (at most the per-Service bound); beyond, a new one is reset")
	fs.DurationVar(&f.proxy.TCPIdle, "service-tcp-idle-timeout", svcproxy.DefaultTCPIdle, "a proxied TCP connection with no byte either way this long is closed")
	fs.DurationVar(&f.proxy.TCPFirstByte, "service-tcp-first-byte-timeout", svcproxy.DefaultTCPFirstByte, "a proxied TCP connection on which no byte went either way this long after it was made is closed (at most the idle timeout)")
	fs.DurationVar(&f.proxy.TCPHalfClosed, "service-tcp-half-closed-timeout", svcproxy.DefaultTCPHalfClosed, "a proxied TCP connection one side of which has ended, with no byte this long, is closed (at most the idle timeout)")
	fs.DurationVar(&f.proxy.UDPIdle, "service-udp-idle-timeout", svcproxy.DefaultUDPIdle, "a proxied UDP flow with no datagram either way this long ends")
	fs.IntVar(&f.proxy.UDPMaxFlows, "service-udp-max-flows", svcproxy.DefaultUDPMaxFlows, "UDP flows (client addresses) one Service port holds at once")
	fs.IntVar(&f.proxy.UDPMaxFlowsPerSource, "service-udp-max-flows-per-source", svcproxy.DefaultUDPMaxFlowsPerSource, "UDP flows one client IP holds at once on one Service port")
	fs.IntVar(&f.dnsMaxForwards, "cluster-dns-max-concurrent", clusterdns.DefaultMaxForwards, "questions the cluster DNS forwards upstream at once; beyond, one is answered REFUSED")
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
	if err := f.checkLimits(); err != nil {
		return c, err
	}
	c.Proxy, c.DNSMaxForwards = f.proxy, f.dnsMaxForwards
	if !serviceInterfaceName.MatchString(f.iface) {
		return c, fmt.Errorf("--service-interface %q: want 1 to 15 characters, letters, digits, '_', '.' or '-', not starting with a digit, '.' or '-' (it names the agent's nftables table too)", f.iface)
	}
	return c, nil
}

// checkLimits refuses a negative bound, naming its flag (0 is the default).
func (f *serviceFlags) checkLimits() error {
	for _, b := range []struct {
		flag string
		v    int64
	}{
		{"--service-max-connections", int64(f.proxy.MaxConns)},
		{"--service-max-connections-per-service", int64(f.proxy.MaxConnsPerService)},
		{"--service-max-connections-per-source", int64(f.proxy.MaxConnsPerSource)},
		{"--service-tcp-idle-timeout", int64(f.proxy.TCPIdle)},
		{"--service-tcp-first-byte-timeout", int64(f.proxy.TCPFirstByte)},
		{"--service-tcp-half-closed-timeout", int64(f.proxy.TCPHalfClosed)},
		{"--service-udp-idle-timeout", int64(f.proxy.UDPIdle)},
		{"--service-udp-max-flows", int64(f.proxy.UDPMaxFlows)},
		{"--service-udp-max-flows-per-source", int64(f.proxy.UDPMaxFlowsPerSource)},
		{"--cluster-dns-max-concurrent", int64(f.dnsMaxForwards)},
	} {
		if b.v < 0 {
			return fmt.Errorf("%s: want 0 (the default) or more", b.flag)
		}
	}
	return nil
}
