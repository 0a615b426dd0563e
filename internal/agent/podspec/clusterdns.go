package podspec

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ClusterDNS is the node's cluster DNS: kubelet's --cluster-dns servers
// and --cluster-domain.
type ClusterDNS struct {
	Servers []string
	Domain  string
}

// PodDNSConfig is the pod's resolv.conf as the kubelet computes it: with a
// cluster DNS, a ClusterFirst pod (and a ClusterFirstWithHostNet one; a
// ClusterFirst pod on the host's network gets Default's) starts from the
// cluster's servers, the searches <ns>.svc.<domain> svc.<domain> <domain>
// then the host's, and options ndots:5; without one, or for the other
// policies, it is DNSConfig's. pod.spec.dnsConfig is merged in as there.
func PodDNSConfig(pod *v1.Pod, host DNS, cluster *ClusterDNS) (*runtimeapi.DNSConfig, error) {
	policy := pod.Spec.DNSPolicy
	clusterFirst := policy == "" || policy == v1.DNSClusterFirstWithHostNet ||
		(policy == v1.DNSClusterFirst && !pod.Spec.HostNetwork)
	if cluster == nil || len(cluster.Servers) == 0 || !clusterFirst {
		return DNSConfig(pod, host)
	}
	if policy == "" && pod.Spec.HostNetwork {
		return DNSConfig(pod, host)
	}
	base := DNS{
		Servers: cluster.Servers,
		Searches: append([]string{
			pod.Namespace + ".svc." + cluster.Domain, "svc." + cluster.Domain, cluster.Domain,
		}, host.Searches...),
		Options: []string{"ndots:5"},
	}
	base.Searches = withoutRepeats(base.Searches)
	return withPodDNSConfig(pod, base)
}
