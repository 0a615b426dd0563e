package workload

import (
	"fmt"
	"net/netip"
)

// ServiceRange is the virtual IP range of ClusterIP Services
// (--service-cluster-ip-range).
type ServiceRange struct {
	Prefix netip.Prefix
}

// DefaultServiceRange is kubeadm's default, 10.96.0.0/12.
var DefaultServiceRange = ServiceRange{Prefix: netip.MustParsePrefix("10.96.0.0/12")}

// ParseServiceRange reads a CIDR; an IPv4 range of at least 8 addresses.
func ParseServiceRange(s string) (ServiceRange, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return ServiceRange{}, fmt.Errorf("service range %q: %w", s, err)
	}
	if !p.Addr().Is4() || p.Bits() > 29 {
		return ServiceRange{}, fmt.Errorf("service range %q: want an IPv4 CIDR of at least 8 addresses", s)
	}
	return ServiceRange{Prefix: p.Masked()}, nil
}

// Nth is the range's n-th address (the network address is the 0th).
func (r ServiceRange) Nth(n int) netip.Addr {
	a := r.Prefix.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// DNSAddr is the cluster DNS Service's address, the range's 10th (kubeadm's
// 10.96.0.10).
func (r ServiceRange) DNSAddr() netip.Addr { return r.Nth(10) }

func (r ServiceRange) size() int {
	return 1 << min(32-r.Prefix.Bits(), 20) // at most a million addresses are looked at
}

// AllocateClusterIP gives a Service its ClusterIP: requested ("" for any)
// when it is in the range, usable and free, else the first free address.
// The network and broadcast addresses and the DNS address are never given
// to a Service but the DNS one.
func (r ServiceRange) AllocateClusterIP(requested string, used map[netip.Addr]bool) (netip.Addr, error) {
	if requested != "" {
		a, err := netip.ParseAddr(requested)
		switch {
		case err != nil:
			return netip.Addr{}, fmt.Errorf("spec.clusterIP: Invalid value: %q: must be a valid IP address", requested)
		case !r.Prefix.Contains(a) || a == r.Nth(0) || a == r.Nth(r.size()-1):
			return netip.Addr{}, fmt.Errorf("spec.clusterIP: Invalid value: %q: provided IP is not in the valid range. The range of valid IPs is %s", requested, r.Prefix)
		case used[a]:
			return netip.Addr{}, fmt.Errorf("spec.clusterIP: Invalid value: %q: provided IP is already allocated", requested)
		}
		return a, nil
	}
	for n := 1; n < r.size()-1; n++ {
		a := r.Nth(n)
		if a != r.DNSAddr() && !used[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("spec.clusterIP: no free address left in %s", r.Prefix)
}

// AllocateNodePort gives a port its nodePort: requested (0 for any) when
// free, else the first free port of min..max.
func AllocateNodePort(requested, minPort, maxPort int32, used map[int32]bool) (int32, error) {
	if requested != 0 {
		if used[requested] {
			return 0, fmt.Errorf("nodePort: Invalid value: %d: provided port is already allocated", requested)
		}
		return requested, nil
	}
	for p := minPort; p <= maxPort; p++ {
		if !used[p] {
			return p, nil
		}
	}
	return 0, fmt.Errorf("nodePort: no free port left in %d-%d", minPort, maxPort)
}
