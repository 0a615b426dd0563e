package agent

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/agent/workload"
)

// A service range or DNS address holding a host address outside the
// service link is refused, naming the flag and the interface; the
// service link's own addresses and addresses elsewhere are not.
func TestServicesCheckHostAddrs(t *testing.T) {
	r, err := workload.ParseServiceRange("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServicesConfig{Range: r, Interface: "berth-svc0"}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	ok := map[string][]netip.Addr{"lo": addrs("127.0.0.1", "::1"), "eth0": addrs("192.0.2.2", "fe80::1"),
		"berth-svc0": addrs("10.96.0.1", "10.96.0.10")}
	if err := cfg.CheckHostAddrs(ok); err != nil {
		t.Errorf("no conflict: %v", err)
	}
	ok["eth1"] = addrs("10.100.0.1")
	err = cfg.CheckHostAddrs(ok)
	if err == nil || !strings.Contains(err.Error(), "--service-cluster-ip-range 10.96.0.0/12 holds 10.100.0.1, an address of the host's interface eth1") {
		t.Errorf("a LAN address in the range: %v", err)
	}
	delete(ok, "eth1")
	cfg.ClusterDNS = netip.MustParseAddr("192.0.2.2")
	if err := cfg.CheckHostAddrs(ok); err == nil || !strings.Contains(err.Error(), "--cluster-dns 192.0.2.2 is an address of the host's interface eth0") {
		t.Errorf("the DNS address is the host's: %v", err)
	}
}
