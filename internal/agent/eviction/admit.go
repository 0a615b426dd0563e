package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// Reason is the status reason of a pod rejected or evicted for pressure.
const Reason = "Evicted"

// Kubelet's message formats (pkg/kubelet/eviction/helpers.go); their
// trailing spaces are kubelet's.
const (
	nodeConditionMessageFmt = "The node had condition: %v. "
	nodeLowMessageFmt       = "The node was low on resource: %v. "
	thresholdMetMessageFmt  = "Threshold quantity: %v, available: %v. "
	containerMessageFmt     = "Container %s was using %s, request is %s, has larger consumption of %v. "
)

// RejectedMessagePrefix starts the status message of a pod the node did
// not admit, as kubelet's rejectPod writes it.
const RejectedMessagePrefix = "Pod was rejected: "

// systemCriticalPriority is kubelet's scheduling.SystemCriticalPriority.
const systemCriticalPriority = 2000000000

// IsCritical reports whether the pod is critical, as kubelet's
// IsCriticalPod reads priority: spec.priority at or above
// system-critical, or (berth has no API server to resolve them) one of
// the two system priority classes by name.
func IsCritical(pod *v1.Pod) bool {
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority {
		return true
	}
	switch pod.Spec.PriorityClassName {
	case "system-node-critical", "system-cluster-critical":
		return true
	}
	return false
}

// Admit decides whether a new pod may start under the node's conditions,
// as kubelet's eviction manager admits: no pressure, or a critical pod,
// or only MemoryPressure and a pod that is not BestEffort or tolerates the
// node.kubernetes.io/memory-pressure:NoSchedule taint. A refusal comes
// with kubelet's reason and message ("The node had condition:
// [DiskPressure]. ").
func (m *Manager) Admit(pod *v1.Pod) (ok bool, reason, message string) {
	return admit(m.Conditions(), pod)
}

func admit(conditions []v1.NodeConditionType, pod *v1.Pod) (bool, string, string) {
	if len(conditions) == 0 || IsCritical(pod) {
		return true, "", ""
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if podspec.QOSClass(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		if podspec.Tolerates(pod.Spec.Tolerations, taint) {
			return true, "", ""
		}
	}
	return false, Reason, fmt.Sprintf(nodeConditionMessageFmt, conditions)
}
