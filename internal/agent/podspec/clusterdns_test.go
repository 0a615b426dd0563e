package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodDNSConfigClusterFirst(t *testing.T) {
	host := DNS{Servers: []string{"192.0.2.53"}, Searches: []string{"corp.example"}, Options: []string{"timeout:2"}}
	cluster := &ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "p"}, Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
	got, err := PodDNSConfig(pod, host, cluster)
	if err != nil {
		t.Fatal(err)
	}
	wantSearches := []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
	if !slices.Equal(got.Servers, cluster.Servers) || !slices.Equal(got.Searches, wantSearches) || !slices.Equal(got.Options, []string{"ndots:5"}) {
		t.Errorf("ClusterFirst: %v %v %v", got.Servers, got.Searches, got.Options)
	}
	// On the host's network, ClusterFirst is Default; ClusterFirstWithHostNet is not.
	pod.Spec.HostNetwork = true
	if got, _ = PodDNSConfig(pod, host, cluster); !slices.Equal(got.Servers, host.Servers) {
		t.Errorf("ClusterFirst on the host network: servers %v; want the host's", got.Servers)
	}
	pod.Spec.DNSPolicy = v1.DNSClusterFirstWithHostNet
	if got, _ = PodDNSConfig(pod, host, cluster); !slices.Equal(got.Servers, cluster.Servers) {
		t.Errorf("ClusterFirstWithHostNet: servers %v; want the cluster's", got.Servers)
	}
	pod.Spec.HostNetwork, pod.Spec.DNSPolicy = false, v1.DNSDefault
	if got, _ = PodDNSConfig(pod, host, cluster); !slices.Equal(got.Servers, host.Servers) {
		t.Errorf("Default: servers %v; want the host's", got.Servers)
	}
	pod.Spec.DNSPolicy = v1.DNSClusterFirst
	if got, _ = PodDNSConfig(pod, host, nil); !slices.Equal(got.Servers, host.Servers) {
		t.Errorf("no cluster DNS: servers %v; want the host's", got.Servers)
	}
}
