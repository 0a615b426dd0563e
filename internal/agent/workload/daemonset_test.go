package workload

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/internal/agent/nodefit"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testDaemonSet(mut func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", Generation: 3},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrIntStr(intstr.FromInt32(1)), MaxSurge: ptrIntStr(intstr.FromInt32(0))}},
		},
	}
	if mut != nil {
		mut(ds)
	}
	return ds
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestReconcileDaemonSet(t *testing.T) {
	node := nodefit.Node("node-1", map[string]string{"disk": "ssd"}, nil, t0)
	tainted := nodefit.Node("node-1", nil, []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}}, t0)
	noExec := nodefit.Node("node-1", nil, []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoExecute}}, t0)
	pressured := nodefit.Node("node-1", nil, []v1.Taint{{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}, {Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}}, t0)
	cur := ComputeHash(&testDaemonSet(nil).Spec.Template, nil)
	readyPod := func(name, hash string, created time.Duration) DaemonPod {
		return DaemonPod{Pod: Pod{Name: name, Phase: v1.PodRunning, Ready: true, ReadySince: t0, Created: t0.Add(created)}, Hash: hash}
	}
	surge := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrIntStr(intstr.FromInt32(0)), MaxSurge: ptrIntStr(intstr.FromInt32(1))}
	}
	for _, tc := range []struct {
		name        string
		ds          *appsv1.DaemonSet
		node        *v1.Node
		pods        []DaemonPod
		create      bool
		del         []string
		desired     int32
		current     int32
		updated     int32
		misschedule int32
	}{
		{name: "no pod: one is made", ds: testDaemonSet(nil), node: node, create: true, desired: 1},
		{name: "selector the node lacks: none", ds: testDaemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "yes"} }), node: node},
		{name: "selector the node has", ds: testDaemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node: node, create: true, desired: 1},
		{name: "label gone: the pod goes", ds: testDaemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "yes"} }), node: node,
			pods: []DaemonPod{readyPod("a", "x", 0)}, del: []string{"a"}, misschedule: 1},
		{name: "NoSchedule taint not tolerated: none made", ds: testDaemonSet(nil), node: tainted},
		{name: "NoSchedule taint not tolerated: a running pod stays", ds: testDaemonSet(nil), node: tainted, pods: []DaemonPod{readyPod("a", cur, 0)}, misschedule: 1},
		{name: "NoExecute taint not tolerated: the pod goes", ds: testDaemonSet(nil), node: noExec, pods: []DaemonPod{readyPod("a", cur, 0)}, del: []string{"a"}, misschedule: 1},
		{name: "tolerated taint", ds: testDaemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
		}), node: noExec, create: true, desired: 1},
		{name: "daemon tolerations cover the condition taints", ds: testDaemonSet(nil), node: pressured, create: true, desired: 1},
		{name: "up to date", ds: testDaemonSet(nil), node: node, pods: []DaemonPod{readyPod("a", cur, 0)}, desired: 1, current: 1, updated: 1},
		{name: "failed pod deleted", ds: testDaemonSet(nil), node: node, pods: []DaemonPod{{Pod: Pod{Name: "a", Phase: v1.PodFailed}, Hash: cur}}, del: []string{"a"}, desired: 1, current: 1, updated: 1},
		{name: "terminating pod: wait", ds: testDaemonSet(nil), node: node, pods: []DaemonPod{{Pod: Pod{Name: "a", Phase: v1.PodRunning, Deleting: true}, Hash: "old"}}, desired: 1, current: 1},
		{name: "extra pods: the oldest stays", ds: testDaemonSet(nil), node: node, pods: []DaemonPod{readyPod("b", cur, time.Second), readyPod("a", cur, 0)}, del: []string{"b"}, desired: 1, current: 1, updated: 1},
		{name: "rolling update: outdated deleted first", ds: testDaemonSet(nil), node: node, pods: []DaemonPod{readyPod("a", "old", 0)}, del: []string{"a"}, desired: 1, current: 1},
		{name: "OnDelete: outdated stays", ds: testDaemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}), node: node, pods: []DaemonPod{readyPod("a", "old", 0)}, desired: 1, current: 1},
		{name: "surge: new pod first", ds: testDaemonSet(surge), node: node, pods: []DaemonPod{readyPod("a", "old", 0)}, create: true, desired: 1, current: 1},
		{name: "surge: new not ready, old stays", ds: testDaemonSet(surge), node: node, pods: []DaemonPod{readyPod("a", "old", 0), {Pod: Pod{Name: "b", Phase: v1.PodPending, Created: t0.Add(time.Second)}, Hash: cur}}, desired: 1, current: 1},
		{name: "surge: new available, old deleted", ds: testDaemonSet(surge), node: node, pods: []DaemonPod{readyPod("a", "old", 0), readyPod("b", cur, time.Second)}, del: []string{"a"}, desired: 1, current: 1},
		{name: "deleted DaemonSet deletes its pod", ds: testDaemonSet(func(ds *appsv1.DaemonSet) { ds.DeletionTimestamp = &metav1.Time{Time: t0} }), node: node, pods: []DaemonPod{readyPod("a", cur, 0)}, del: []string{"a"}, misschedule: 1},
	} {
		got := ReconcileDaemonSet(tc.ds, tc.node, tc.pods, t0.Add(time.Minute))
		if got.Create != tc.create || !slices.Equal(got.Delete, tc.del) {
			t.Errorf("%s: create %v delete %v; want %v %v", tc.name, got.Create, got.Delete, tc.create, tc.del)
		}
		s := got.Status
		if s.DesiredNumberScheduled != tc.desired || s.CurrentNumberScheduled != tc.current || s.UpdatedNumberScheduled != tc.updated ||
			s.NumberMisscheduled != tc.misschedule || s.ObservedGeneration != 3 {
			t.Errorf("%s: status %+v", tc.name, s)
		}
	}
}

func TestDaemonPodTemplate(t *testing.T) {
	ds := testDaemonSet(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.HostNetwork = true
		ds.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64)}}
		ds.Spec.Template.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpExists}}}},
		}}}
	})
	tmpl := DaemonPodTemplate(ds, "node-1", "abc")
	if tmpl.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "abc" || tmpl.Labels["app"] != "agent" {
		t.Errorf("labels %v", tmpl.Labels)
	}
	if len(tmpl.Spec.Tolerations) != 7 || tmpl.Spec.Tolerations[0].TolerationSeconds != nil {
		t.Errorf("tolerations %+v: want the 7 daemon ones, not-ready replaced", tmpl.Spec.Tolerations)
	}
	term := tmpl.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "node-1" {
		t.Errorf("term %+v", term)
	}
	if ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("the DaemonSet's own template was changed")
	}
}
