package nodefit

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// ReasonUnschedulable is the reason of the PodScheduled=False condition
// the scheduler gives a pod it could not place (v1.PodReasonUnschedulable).
const ReasonUnschedulable = v1.PodReasonUnschedulable

// The scheduler's filter reasons (pkg/scheduler/framework/plugins) and
// its FitError format (one node here), as kube-scheduler 1.34 words them:
// the TaintToleration plugin names no taint since 1.34.2 (taints may be
// sensitive), and with DynamicResourceAllocation on by default its
// PostFilter speaks before preemption's.
const (
	descUnschedulable = "node(s) were unschedulable"
	descUntolerated   = "node(s) had untolerated taint(s)"
	fitErrorFormat    = "0/1 nodes are available: 1 %s. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)

// conditionTaints are the NoSchedule taints the node lifecycle
// controller puts on a node for its conditions (TaintNodesByCondition).
var conditionTaints = map[v1.NodeConditionType]string{
	v1.NodeMemoryPressure: v1.TaintNodeMemoryPressure,
	v1.NodeDiskPressure:   v1.TaintNodeDiskPressure,
	v1.NodePIDPressure:    v1.TaintNodePIDPressure,
}

// ConditionTaints are the taints of the pressure conditions, in the
// order given, as TaintNodesByCondition adds them (NoSchedule, no value).
func ConditionTaints(conditions []v1.NodeConditionType) []v1.Taint {
	var out []v1.Taint
	for _, c := range conditions {
		if key, ok := conditionTaints[c]; ok {
			out = append(out, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
		}
	}
	return out
}

// WithTaints is a copy of node with taints added after its own.
func WithTaints(node *v1.Node, taints []v1.Taint) *v1.Node {
	out := node.DeepCopy()
	out.Spec.Taints = append(out.Spec.Taints, taints...)
	return out
}

// Schedule decides whether the scheduler would place the pod (not bound
// to a node yet) on the node, with the default plugins' filters in their
// order: NodeUnschedulable, TaintToleration (NoSchedule and NoExecute
// taints, the pod's own tolerations only), NodeAffinity (nodeSelector
// and required node affinity), NodeResourcesFit (the room left on the
// node: its pod count, CPU, memory, ephemeral storage). A pod that does
// not fit gets reason Unschedulable and the FitError message its
// FailedScheduling event and PodScheduled condition carry.
func Schedule(pod *v1.Pod, node *v1.Node, room Room) Result {
	desc := ""
	switch {
	case node.Spec.Unschedulable && !podspec.Tolerates(pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}):
		desc = descUnschedulable
	case untolerated(pod, node):
		desc = descUntolerated
	default:
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
			desc = descNodeAffinity
		}
	}
	if desc == "" {
		return room.ScheduleResources(pod)
	}
	return Result{Reason: ReasonUnschedulable, Message: fmt.Sprintf(fitErrorFormat, desc)}
}

func untolerated(pod *v1.Pod, node *v1.Node) bool {
	_, found := UntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations)
	return found
}
