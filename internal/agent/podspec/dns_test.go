package podspec

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

var hostDNS = DNS{Servers: []string{"192.168.1.1", "192.168.1.2"}, Searches: []string{"lan"}, Options: []string{"ndots:1", "edns0"}}

func TestDNSPolicies(t *testing.T) {
	podConfig := &v1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1", "192.168.1.1"},
		Searches:    []string{"svc.example", "lan"},
		Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("5")}, {Name: "rotate"}},
	}
	cases := []struct {
		name                      string
		policy                    v1.DNSPolicy
		config                    *v1.PodDNSConfig
		servers, searches, option []string
		nilConfig                 bool
	}{
		{name: "ClusterFirst is the host's", policy: v1.DNSClusterFirst,
			servers: hostDNS.Servers, searches: hostDNS.Searches, option: hostDNS.Options},
		{name: "empty policy is ClusterFirst", policy: "",
			servers: hostDNS.Servers, searches: hostDNS.Searches, option: hostDNS.Options},
		{name: "Default", policy: v1.DNSDefault,
			servers: hostDNS.Servers, searches: hostDNS.Searches, option: hostDNS.Options},
		{name: "ClusterFirstWithHostNet", policy: v1.DNSClusterFirstWithHostNet,
			servers: hostDNS.Servers, searches: hostDNS.Searches, option: hostDNS.Options},
		{name: "Default merged with dnsConfig", policy: v1.DNSDefault, config: podConfig,
			servers:  []string{"192.168.1.1", "192.168.1.2", "1.1.1.1"},
			searches: []string{"lan", "svc.example"},
			option:   []string{"ndots:5", "edns0", "rotate"}},
		{name: "None uses dnsConfig only", policy: v1.DNSNone, config: podConfig,
			servers: []string{"1.1.1.1", "192.168.1.1"}, searches: []string{"svc.example", "lan"}, option: []string{"ndots:5", "rotate"}},
		{name: "None without dnsConfig", policy: v1.DNSNone, nilConfig: true},
	}
	for _, tc := range cases {
		pod := newPod(newContainer("a"))
		pod.Spec.DNSPolicy = tc.policy
		pod.Spec.DNSConfig = tc.config
		got, err := DNSConfig(pod, hostDNS)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.nilConfig {
			if got != nil {
				t.Errorf("%s: %v, want nil", tc.name, got)
			}
			continue
		}
		if !slices.Equal(got.Servers, tc.servers) || !slices.Equal(got.Searches, tc.searches) || !slices.Equal(got.Options, tc.option) {
			t.Errorf("%s: %v %v %v, want %v %v %v", tc.name, got.Servers, got.Searches, got.Options, tc.servers, tc.searches, tc.option)
		}
	}
	pod := newPod(newContainer("a"))
	pod.Spec.DNSPolicy = "Weird"
	if _, err := DNSConfig(pod, hostDNS); err == nil {
		t.Error("unknown policy accepted")
	}
}

func TestDNSLimits(t *testing.T) {
	pod := newPod(newContainer("a"))
	pod.Spec.DNSPolicy = v1.DNSNone
	cfg := &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}}
	for i := 0; i < 40; i++ {
		cfg.Searches = append(cfg.Searches, fmt.Sprintf("d%d.example", i))
	}
	cfg.Searches = append([]string{strings.Repeat("x", 254)}, cfg.Searches...)
	pod.Spec.DNSConfig = cfg
	got, err := DNSConfig(pod, DNS{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 3 {
		t.Errorf("%d servers, want 3", len(got.Servers))
	}
	if len(got.Searches) != 32 || got.Searches[0] != "d0.example" {
		t.Errorf("%d searches starting %q, want 32 without the over-long one", len(got.Searches), got.Searches[0])
	}
	long := &v1.PodDNSConfig{}
	for i := 0; i < 20; i++ {
		long.Searches = append(long.Searches, fmt.Sprintf("%03d", i)+strings.Repeat("y", 200))
	}
	pod.Spec.DNSConfig = long
	got, _ = DNSConfig(pod, DNS{})
	if n := len(strings.Join(got.Searches, " ")); n > 2048 || len(got.Searches) != 10 {
		t.Errorf("search line %d chars with %d domains, want <= 2048 with 10", n, len(got.Searches))
	}
}

func TestParseResolvConf(t *testing.T) {
	in := `# generated
nameserver 10.0.0.1
; comment
nameserver 10.0.0.2
search old.example
search a.example. b.example .
options ndots:2 timeout:1
options ndots:3 rotate
domain ignored.example
`
	got, err := ParseResolvConf(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Servers, []string{"10.0.0.1", "10.0.0.2"}) ||
		!slices.Equal(got.Searches, []string{"a.example", "b.example"}) ||
		!slices.Equal(got.Options, []string{"ndots:3", "timeout:1", "rotate"}) {
		t.Errorf("got %+v", got)
	}
	if _, err := ParseResolvConf(strings.NewReader("nameserver\n")); err == nil {
		t.Error("nameserver without address accepted")
	}
}
