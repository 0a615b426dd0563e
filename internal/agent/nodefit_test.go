package agent

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const selectorPod = `
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  SPEC
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
`

func podWith(name, spec string) string {
	return strings.ReplaceAll(strings.ReplaceAll(selectorPod, "NAME", name), "SPEC", spec)
}

func TestNodeLabelsAndTaintsAdmitPods(t *testing.T) {
	rt := criclienttest.New()
	a, vols := newTestAgentWith(t, rt, t.TempDir(), clock.RealClock{}, func(c *Config) {
		c.NodeLabels = map[string]string{"disk": "ssd"}
		c.NodeTaints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, {Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}}
	})
	ta := runTestAgent(t, a, vols)
	node := ta.Node().Node
	if node.Labels["disk"] != "ssd" || node.Labels[v1.LabelHostname] != "node-1" || len(node.Spec.Taints) != 2 {
		t.Errorf("node labels %v taints %v", node.Labels, node.Spec.Taints)
	}
	tolerate := `tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]`
	ta.apply(t, podWith("fits", "nodeSelector: {disk: ssd}\n  "+tolerate))
	ta.apply(t, podWith("wrong-disk", "nodeSelector: {disk: hdd}\n  "+tolerate))
	ta.apply(t, podWith("intolerant", "nodeSelector: {disk: ssd}"))
	ta.apply(t, podWith("elsewhere", "nodeName: node-2\n  "+tolerate))
	waitFor(t, "fits runs", func() bool { return ta.pod(t, "fits").Status.Phase == v1.PodRunning })
	for _, tc := range []struct{ name, reason, message string }{
		{"wrong-disk", "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"intolerant", "TaintToleration", "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{"elsewhere", "NodeName", "Pod was rejected: Predicate NodeName failed: node(s) didn't match the requested node name"},
	} {
		waitFor(t, tc.name+" is rejected", func() bool { return ta.pod(t, tc.name).Status.Phase == v1.PodFailed })
		st := ta.pod(t, tc.name).Status
		if st.Reason != tc.reason || st.Message != tc.message {
			t.Errorf("%s: reason %q message %q", tc.name, st.Reason, st.Message)
		}
		d, _ := ta.DescribePod("default", tc.name)
		if !hasEventOf(d.Events, agentapi.EventWarning, tc.reason, strings.TrimPrefix(tc.message, "Pod was rejected: ")) {
			t.Errorf("%s: no %s event: %+v", tc.name, tc.reason, d.Events)
		}
		for _, c := range rt.Calls() {
			if strings.Contains(c, tc.name) {
				t.Errorf("the runtime saw the rejected pod %s: %s", tc.name, c)
			}
		}
	}
}

func TestNewRefusesBadNodeLabels(t *testing.T) {
	_, err := New(Config{Runtime: criclienttest.New(), Images: criclienttest.New(), RootDir: t.TempDir(), NodeName: "n", NodeLabels: map[string]string{"kubernetes.io/role": "x"}})
	if err == nil || !strings.Contains(err.Error(), "--node-labels") {
		t.Errorf("New: %v", err)
	}
}
