package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionText is kubelet's reason and message for a condition, when it
// is True (pressure, or ready) and when not.
type conditionText struct {
	typ                       v1.NodeConditionType
	trueReason, trueMessage   string
	falseReason, falseMessage string
}

var nodeConditionTexts = []conditionText{
	{typ: v1.NodeMemoryPressure, trueReason: "KubeletHasInsufficientMemory", trueMessage: "kubelet has insufficient memory available",
		falseReason: "KubeletHasSufficientMemory", falseMessage: "kubelet has sufficient memory available"},
	{typ: v1.NodeDiskPressure, trueReason: "KubeletHasDiskPressure", trueMessage: "kubelet has disk pressure",
		falseReason: "KubeletHasNoDiskPressure", falseMessage: "kubelet has no disk pressure"},
	{typ: v1.NodePIDPressure, trueReason: "KubeletHasInsufficientPID", trueMessage: "kubelet has insufficient PID available",
		falseReason: "KubeletHasSufficientPID", falseMessage: "kubelet has sufficient PID available"},
	{typ: v1.NodeReady, trueReason: "KubeletReady", trueMessage: "kubelet is posting ready status",
		falseReason: "KubeletNotReady"},
}

// NodeConditions computes the node's conditions as kubelet's node status
// setters do: MemoryPressure, DiskPressure, PIDPressure (True while in
// pressure) and Ready (notReady: why not, "" when ready), each with
// kubelet's reason and message; lastHeartbeatTime is now, and
// lastTransitionTime moves only when the status changes from prev.
func NodeConditions(prev []v1.NodeCondition, pressure []v1.NodeConditionType, notReady string, now time.Time) []v1.NodeCondition {
	out := make([]v1.NodeCondition, 0, len(nodeConditionTexts))
	t := metav1.NewTime(now)
	for _, text := range nodeConditionTexts {
		isTrue := slices.Contains(pressure, text.typ)
		if text.typ == v1.NodeReady {
			isTrue = notReady == ""
		}
		c := v1.NodeCondition{Type: text.typ, Status: v1.ConditionFalse, Reason: text.falseReason, Message: text.falseMessage, LastHeartbeatTime: t, LastTransitionTime: t}
		if isTrue {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, text.trueReason, text.trueMessage
		} else if text.typ == v1.NodeReady {
			c.Message = notReady
		}
		for _, p := range prev {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}
