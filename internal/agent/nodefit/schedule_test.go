package nodefit

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// roomy is a node with room for any pod.
var roomy = Room{Allocatable: Resources{Pods: DefaultMaxPods, MilliCPU: 4000, Memory: 8 << 30}}

func TestSchedule(t *testing.T) {
	pressure := ConditionTaints([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeReady, v1.NodePIDPressure})
	if len(pressure) != 2 || pressure[0].Key != v1.TaintNodeMemoryPressure || pressure[1].Key != v1.TaintNodePIDPressure ||
		pressure[0].Effect != v1.TaintEffectNoSchedule || pressure[0].Value != "" {
		t.Fatalf("ConditionTaints = %v", pressure)
	}
	base := Node("node1", map[string]string{"disk": "ssd"}, []v1.Taint{{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}}, time.Time{})
	node := WithTaints(base, pressure)
	if len(base.Spec.Taints) != 1 || len(node.Spec.Taints) != 3 {
		t.Fatalf("WithTaints changed its input or lost taints: %v, %v", base.Spec.Taints, node.Spec.Taints)
	}
	tolerateAll := []v1.Toleration{{Operator: v1.TolerationOpExists}}
	const taints = "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	const affinity = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	for _, tc := range []struct {
		name    string
		node    *v1.Node
		spec    v1.PodSpec
		message string
	}{
		{"no pressure", base, v1.PodSpec{}, ""},
		{"pressure taint", node, v1.PodSpec{}, taints},
		{"tolerates everything", node, v1.PodSpec{Tolerations: tolerateAll}, ""},
		{"tolerates memory only", node, v1.PodSpec{Tolerations: []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}}, taints},
		{"taints before affinity", node, v1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, taints},
		{"affinity", node, v1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}, Tolerations: tolerateAll}, affinity},
	} {
		got := Schedule(&v1.Pod{Spec: tc.spec}, tc.node, roomy)
		if got.Admit != (tc.message == "") || got.Message != tc.message || (!got.Admit && got.Reason != "Unschedulable") {
			t.Errorf("%s: %+v, want message %q", tc.name, got, tc.message)
		}
	}
	cordoned := base.DeepCopy()
	cordoned.Spec.Unschedulable = true
	if got := Schedule(&v1.Pod{}, cordoned, roomy); got.Admit || got.Message[:50] != "0/1 nodes are available: 1 node(s) were unschedula" {
		t.Errorf("unschedulable node: %+v", got)
	}
}
