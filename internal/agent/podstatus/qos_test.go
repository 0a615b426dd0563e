package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// TestComputeQOSClassIsPodspecs checks the status reports the one QoS rule
// (podspec.QOSClass, whose table is in podspec) and not a rule of its own: a
// container with limits only is Guaranteed there, its requests defaulting to
// its limits, exactly as the cgroup parent and oom_score_adj see it.
func TestComputeQOSClassIsPodspecs(t *testing.T) {
	limited := ctr("a")
	limited.Resources.Limits = v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("500m"),
		v1.ResourceMemory: resource.MustParse("128Mi"),
	}
	podLevel := newPod("", nil, ctr("a"))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("0")}}
	for _, p := range []*v1.Pod{
		newPod("", nil, ctr("a")),
		newPod("", nil, limited),
		newPod("", nil, limited, ctr("b")),
		podLevel,
	} {
		want := podspec.QOSClass(p)
		if got := Compute(input(p, observed(nil))).QOSClass; got != want {
			t.Errorf("containers %v: status says %s, podspec.QOSClass %s", p.Spec.Containers, got, want)
		}
	}
	if got := Compute(input(newPod("", nil, limited), observed(nil))).QOSClass; got != v1.PodQOSGuaranteed {
		t.Errorf("limits only: status says %s, want Guaranteed", got)
	}
}
