package nodefit

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		flag, err string
		want      map[string]string
	}{
		{flag: "", want: map[string]string{}},
		{flag: "disk=ssd, zone=a", want: map[string]string{"disk": "ssd", "zone": "a"}},
		{flag: "node.kubernetes.io/role=edge,kubernetes.io/hostname=h,topology.kubernetes.io/zone=z", want: map[string]string{
			"node.kubernetes.io/role": "edge", "kubernetes.io/hostname": "h", "topology.kubernetes.io/zone": "z",
		}},
		{flag: "sub.kubelet.kubernetes.io/x=y", want: map[string]string{"sub.kubelet.kubernetes.io/x": "y"}},
		{flag: "example.com/gpu=", want: map[string]string{"example.com/gpu": ""}},
		{flag: "node-role.kubernetes.io/master=", err: "unknown 'kubernetes.io' or 'k8s.io' labels [node-role.kubernetes.io/master]"},
		{flag: "k8s.io/x=y", err: "unknown 'kubernetes.io'"},
		{flag: "disk", err: `"disk": want key=value`},
		{flag: "bad key=x", err: `invalid node labels: "bad key"`},
		{flag: "disk=-ssd", err: `invalid node labels: "disk"="-ssd"`},
	} {
		got, err := ParseLabels(tc.flag)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "--node-labels") {
				t.Errorf("ParseLabels(%q) = %v, want error with %q", tc.flag, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tc.flag, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseLabels(%q)[%q] = %q, want %q", tc.flag, k, got[k], v)
			}
		}
	}
}

func TestParseTaints(t *testing.T) {
	for _, tc := range []struct {
		flag, err string
		want      []v1.Taint
	}{
		{flag: "", want: nil},
		{flag: "dedicated=gpu:NoSchedule,maintenance:NoExecute, soft=x:PreferNoSchedule", want: []v1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
			{Key: "maintenance", Effect: v1.TaintEffectNoExecute},
			{Key: "soft", Value: "x", Effect: v1.TaintEffectPreferNoSchedule},
		}},
		{flag: "a=b:NoSchedule,a=c:NoExecute", want: []v1.Taint{{Key: "a", Value: "b", Effect: v1.TaintEffectNoSchedule}, {Key: "a", Value: "c", Effect: v1.TaintEffectNoExecute}}},
		{flag: "a=b:NoSchedule,a=c:NoSchedule", err: "given twice"},
		{flag: "dedicated=gpu", err: "want key[=value]:effect"},
		{flag: "dedicated=gpu:Never", err: `effect "Never"`},
		{flag: "bad key:NoSchedule", err: `key "bad key"`},
		{flag: "k=bad value:NoSchedule", err: `value "bad value"`},
	} {
		got, err := ParseTaints(tc.flag)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "--register-with-taints") {
				t.Errorf("ParseTaints(%q) = %v, want error with %q", tc.flag, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseTaints(%q) = %v, %v; want %v", tc.flag, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseTaints(%q)[%d] = %v, want %v", tc.flag, i, got[i], tc.want[i])
			}
		}
	}
}

func TestNodeLabelsOverrideWellKnown(t *testing.T) {
	n := Node("node1", map[string]string{"disk": "ssd", v1.LabelHostname: "custom"}, nil, time.Time{})
	if n.Labels["disk"] != "ssd" || n.Labels[v1.LabelHostname] != "custom" || n.Labels[v1.LabelOSStable] != "linux" || n.Labels[LabelArchBeta] == "" {
		t.Errorf("labels %v", n.Labels)
	}
}

func TestAdmit(t *testing.T) {
	node := Node("node1", map[string]string{"disk": "ssd", "cores": "8"}, []v1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule},
	}, time.Time{})
	tolerateGPU := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	req := func(reqs ...v1.NodeSelectorRequirement) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: reqs}},
		}}}
	}
	for _, tc := range []struct {
		name   string
		spec   v1.PodSpec
		reason string
	}{
		{"tolerates, no selector", v1.PodSpec{Tolerations: tolerateGPU}, ""},
		{"nodeSelector matches", v1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}, Tolerations: tolerateGPU}, ""},
		{"nodeSelector misses", v1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}, Tolerations: tolerateGPU}, ReasonNodeAffinity},
		{"nodeSelector well-known label", v1.PodSpec{NodeSelector: map[string]string{v1.LabelOSStable: "linux"}, Tolerations: tolerateGPU}, ""},
		{"In", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"nvme", "ssd"}}), Tolerations: tolerateGPU}, ""},
		{"NotIn", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "disk", Operator: v1.NodeSelectorOpNotIn, Values: []string{"ssd"}}), Tolerations: tolerateGPU}, ReasonNodeAffinity},
		{"Exists", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "disk", Operator: v1.NodeSelectorOpExists}), Tolerations: tolerateGPU}, ""},
		{"DoesNotExist", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "disk", Operator: v1.NodeSelectorOpDoesNotExist}), Tolerations: tolerateGPU}, ReasonNodeAffinity},
		{"Gt", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "cores", Operator: v1.NodeSelectorOpGt, Values: []string{"4"}}), Tolerations: tolerateGPU}, ""},
		{"Lt", v1.PodSpec{Affinity: req(v1.NodeSelectorRequirement{Key: "cores", Operator: v1.NodeSelectorOpLt, Values: []string{"4"}}), Tolerations: tolerateGPU}, ReasonNodeAffinity},
		{"matchFields metadata.name", v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node2"}}}}},
		}}}, Tolerations: tolerateGPU}, ReasonNodeAffinity},
		{"nodeName this node", v1.PodSpec{NodeName: "node1", Tolerations: tolerateGPU}, ""},
		{"nodeName other node", v1.PodSpec{NodeName: "node2", Tolerations: tolerateGPU}, ReasonNodeName},
		{"intolerant", v1.PodSpec{}, ReasonTaintToleration},
		{"toleration Exists on key", v1.PodSpec{Tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}}, ""},
		{"toleration Exists on everything", v1.PodSpec{Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}}}, ""},
		{"toleration wrong value", v1.PodSpec{Tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "cpu"}}}, ReasonTaintToleration},
		{"toleration wrong effect", v1.PodSpec{Tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoExecute}}}, ReasonTaintToleration},
		{"affinity before taints", v1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, ReasonNodeAffinity},
	} {
		got := Admit(&v1.Pod{Spec: tc.spec}, node)
		if got.Admit != (tc.reason == "") || got.Reason != tc.reason {
			t.Errorf("%s: Admit = %+v, want reason %q", tc.name, got, tc.reason)
		}
	}
	noExec := Node("node1", nil, []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}, time.Time{})
	got := Admit(&v1.Pod{}, noExec)
	if got.Reason != ReasonTaintToleration || got.Message != "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate" {
		t.Errorf("NoExecute: %+v", got)
	}
	got = Admit(&v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{"x": "y"}}}, noExec)
	if got.Message != "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" {
		t.Errorf("NodeAffinity message %q", got.Message)
	}
}
