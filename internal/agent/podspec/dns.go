package podspec

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits the API server and the kubelet put on a pod's resolv.conf.
const (
	maxDNSServers         = 3
	maxDNSSearches        = 32
	maxDNSSearchLineChars = 2048
	maxDNSSearchChars     = 253
)

// DNS is the content of a resolv.conf.
type DNS struct {
	Servers, Searches, Options []string
}

// ParseResolvConf reads the nameserver, search and options lines of a
// resolv.conf. A later search line replaces an earlier one (and a search
// domain's trailing dot is dropped, "." itself skipped); a later option
// replaces an earlier one of the same name.
func ParseResolvConf(r io.Reader) (DNS, error) {
	var dns DNS
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				return DNS{}, fmt.Errorf("resolv.conf: nameserver line without an address")
			}
			dns.Servers = append(dns.Servers, fields[1])
		case "search":
			dns.Searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					dns.Searches = append(dns.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			dns.Options = mergeOptions(dns.Options, fields[1:])
		}
	}
	if err := sc.Err(); err != nil {
		return DNS{}, fmt.Errorf("resolv.conf: %w", err)
	}
	return dns, nil
}

// DNSConfig is the pod's resolv.conf as the kubelet computes it on a node
// with no cluster DNS: policy None starts empty, every other policy
// (ClusterFirst, ClusterFirstWithHostNet, Default) starts from the host's;
// pod.spec.dnsConfig is then merged in (servers and searches appended without
// repeats, options by name, the pod's winning) and the result cut to 3
// servers and 32 searches (of at most 253 chars, 2048 in all). Nil means "let
// the runtime use the host's file as is".
func DNSConfig(pod *v1.Pod, host DNS) (*runtimeapi.DNSConfig, error) {
	var base DNS
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
	case "", v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault:
		base = host
	default:
		return nil, fmt.Errorf("dnsPolicy %q: unknown", pod.Spec.DNSPolicy)
	}
	return withPodDNSConfig(pod, base)
}

// withPodDNSConfig merges pod.spec.dnsConfig into base and applies the
// limits.
func withPodDNSConfig(pod *v1.Pod, base DNS) (*runtimeapi.DNSConfig, error) {
	dns := DNS{
		Servers:  slices.Clone(base.Servers),
		Searches: slices.Clone(base.Searches),
		Options:  slices.Clone(base.Options),
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		dns.Servers = withoutRepeats(append(dns.Servers, pc.Nameservers...))
		dns.Searches = withoutRepeats(append(dns.Searches, pc.Searches...))
		dns.Options = mergeOptions(dns.Options, podOptions(pc.Options))
	}
	if len(dns.Servers)+len(dns.Searches)+len(dns.Options) == 0 {
		return nil, nil
	}
	return &runtimeapi.DNSConfig{
		Servers:  dns.Servers[:min(len(dns.Servers), maxDNSServers)],
		Searches: searchesWithinLimits(dns.Searches),
		Options:  dns.Options,
	}, nil
}

func podOptions(opts []v1.PodDNSConfigOption) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		if o.Value != nil && *o.Value != "" {
			out = append(out, o.Name+":"+*o.Value)
		} else {
			out = append(out, o.Name)
		}
	}
	return out
}

// mergeOptions adds options ("name" or "name:value") to base; one with a name
// already present replaces it in place.
func mergeOptions(base, more []string) []string {
	out := slices.Clone(base)
	for _, opt := range more {
		name, _, _ := strings.Cut(opt, ":")
		i := slices.IndexFunc(out, func(o string) bool {
			n, _, _ := strings.Cut(o, ":")
			return n == name
		})
		if i >= 0 {
			out[i] = opt
		} else {
			out = append(out, opt)
		}
	}
	return out
}

func withoutRepeats(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func searchesWithinLimits(searches []string) []string {
	var out []string
	total := 0
	for _, s := range searches {
		if len(out) == maxDNSSearches {
			break
		}
		if len(s) > maxDNSSearchChars {
			continue
		}
		cost := len(s)
		if len(out) > 0 {
			cost++ // the separating blank
		}
		if total+cost > maxDNSSearchLineChars {
			break
		}
		total += cost
		out = append(out, s)
	}
	return out
}
