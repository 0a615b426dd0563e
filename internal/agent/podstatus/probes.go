package podstatus

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// UpdateProbes brings a status Compute returned earlier up to date with
// newer probe results, apart from any sync, as the kubelet's status manager
// does on a readiness or startup result (SetContainerReadiness,
// SetContainerStartup): started and ready of each init (sidecar) and
// regular container whose containerID names the instance a result is for
// (probes by container name, as in Input), then ContainersReady and Ready
// from them. State, phase and the other conditions stay as computed; a
// condition whose status changes gets now as its lastTransitionTime. It
// reports whether anything changed.
func UpdateProbes(s *v1.PodStatus, pod *v1.Pod, probes map[string]plan.ProbeStatus, now time.Time) bool {
	changed := false
	for _, list := range []struct {
		specs    []v1.Container
		statuses []v1.ContainerStatus
		isInit   bool
	}{
		{pod.Spec.InitContainers, s.InitContainerStatuses, true},
		{pod.Spec.Containers, s.ContainerStatuses, false},
	} {
		for i := range list.specs {
			spec := &list.specs[i]
			st := findStatus(list.statuses, spec.Name)
			probe, ok := probes[spec.Name]
			if st == nil || !ok || !isInstance(st.ContainerID, probe.ContainerID) {
				continue
			}
			before := st.Ready
			beforeStarted := st.Started != nil && *st.Started
			applyProbe(spec, st, probe, list.isInit)
			changed = changed || before != st.Ready || beforeStarted != *st.Started
		}
	}
	if changed {
		updateReadyConditions(s, pod, now)
	}
	return changed
}

// isInstance reports whether a status's containerID names the raw
// container id.
func isInstance(containerID, id string) bool {
	return id != "" && RawContainerID(containerID) == id
}

// RawContainerID is the runtime's own id in a status's containerID
// ("<runtime>://<id>"); "" when it has none.
func RawContainerID(containerID string) string {
	_, id, _ := strings.Cut(containerID, "://")
	return id
}

// updateReadyConditions recomputes ContainersReady and Ready in place from
// the container statuses.
func updateReadyConditions(s *v1.PodStatus, pod *v1.Pod, now time.Time) {
	all := append(append([]v1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
	for _, fresh := range []v1.PodCondition{
		containersReadyCondition(pod, all, s.Phase),
		readyCondition(pod, s.Conditions, all, s.Phase),
	} {
		old := findCondition(s.Conditions, fresh.Type)
		if old == nil {
			continue
		}
		fresh.LastTransitionTime, fresh.ObservedGeneration = old.LastTransitionTime, pod.Generation
		if old.Status != fresh.Status {
			fresh.LastTransitionTime = metav1.NewTime(now)
		}
		*old = fresh
	}
}
