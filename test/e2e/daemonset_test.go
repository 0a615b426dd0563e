package e2e

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// daemonSetYAML is a DaemonSet of one sleeping busybox, with a template
// spec line (a nodeSelector) when given.
func daemonSetYAML(name, spec string) string {
	return `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ` + name + `}
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      ` + spec + `
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`
}

// A DaemonSet runs one pod <ds>-xxxxx on the node; one whose nodeSelector
// the node lacks wants none, until the agent restarts with that label in
// --node-labels; a plain pod whose nodeSelector misses is rejected as
// kubelet rejects it; get/describe ds, get node --show-labels tell so;
// delete -f removes the DaemonSets and their pods.
func TestDaemonSetFollowsTheNodesLabels(t *testing.T) {
	onEachRuntime(t, daemonSetFollowsTheNodesLabels)
}

func daemonSetFollowsTheNodesLabels(t *testing.T, n *node) {
	file := n.write("ds.yaml", daemonSetYAML("everywhere", "")+"---\n"+daemonSetYAML("labelled", "nodeSelector: {berth-e2e/ds: \"yes\"}"))
	if out := n.must("apply", "-f", file); !strings.Contains(out, "daemonset.apps/everywhere created") || !strings.Contains(out, "daemonset.apps/labelled created") {
		t.Fatalf("apply: %q", out)
	}
	n.waitDaemonSet("everywhere", "its pod is available", func(ds *appsv1.DaemonSet) bool {
		return ds.Status.NumberAvailable == 1 && ds.Status.UpdatedNumberScheduled == 1
	})
	n.waitDaemonSet("labelled", "it is observed", func(ds *appsv1.DaemonSet) bool { return ds.Status.ObservedGeneration == 1 })
	pods := n.daemonPods()
	if len(pods) != 1 || !regexp.MustCompile(`^everywhere-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(onlyKey(pods)) {
		t.Fatalf("pods of the DaemonSets: %v", slices.Sorted(maps.Keys(pods)))
	}
	if out := n.must("get", "ds"); !regexp.MustCompile(`(?m)^NAME +DESIRED +CURRENT +READY +UP-TO-DATE +AVAILABLE +NODE SELECTOR +AGE\neverywhere +1 +1 +1 +1 +1 +<none> +\S+\nlabelled +0 +0 +0 +0 +0 +berth-e2e/ds=yes +`).MatchString(out) {
		t.Errorf("get ds:\n%s", out)
	}

	n.apply("picky.yaml", `apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  nodeSelector: {disk: hdd}
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`)
	p := n.waitPod("picky", "it is rejected", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "NodeAffinity" || p.Status.Message != "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" || !n.hasEvent("picky", "NodeAffinity") {
		t.Errorf("picky: reason %q message %q", p.Status.Reason, p.Status.Message)
	}

	n.restartAgentWith("--node-labels=berth-e2e/ds=yes")
	n.waitDaemonSet("labelled", "its pod comes with the label", func(ds *appsv1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 1 && ds.Status.NumberAvailable == 1
	})
	if out := n.must("get", "node", "--show-labels"); !strings.Contains(out, "berth-e2e/ds=yes") || !strings.Contains(out, "kubernetes.io/os=linux") {
		t.Errorf("get node --show-labels:\n%s", out)
	}
	if out := n.must("describe", "ds", "labelled"); !regexp.MustCompile(`Desired Number of Nodes Scheduled: +1\n`).MatchString(out) || !strings.Contains(out, "SuccessfulCreate") {
		t.Errorf("describe ds:\n%s", out)
	}
	if out := n.must("rollout", "status", "ds/labelled"); !strings.Contains(out, `daemon set "labelled" successfully rolled out`) {
		t.Errorf("rollout status: %q", out)
	}
	before := n.daemonPods()
	if out := n.must("rollout", "restart", "ds/labelled"); !strings.Contains(out, "daemonset.apps/labelled restarted") {
		t.Errorf("rollout restart: %q", out)
	}
	if out := n.must("rollout", "status", "ds/labelled"); !strings.Contains(out, `daemon set "labelled" successfully rolled out`) {
		t.Errorf("rollout status after the restart: %q", out)
	}
	n.waitDaemonSet("labelled", "the restarted pod replaces the old one", func(*appsv1.DaemonSet) bool {
		after := n.daemonPods()
		for name, p := range after {
			if _, old := before[name]; old && p.Labels["app"] == "labelled" {
				return false
			}
		}
		return len(after) == 2
	})

	if out := n.must("delete", "-f", file); !strings.Contains(out, `daemonset.apps "everywhere" deleted`) || !strings.Contains(out, `daemonset.apps "labelled" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	if pods := n.daemonPods(); len(pods) != 0 {
		t.Errorf("after delete -f: pods %v", slices.Sorted(maps.Keys(pods)))
	}
}

// A taint from --register-with-taints rejects a pod that does not
// tolerate it and admits one that does; describe node lists it.
func TestRegisteredTaintAdmitsOnlyTolerations(t *testing.T) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) {
		n := start("--register-with-taints=berth-e2e/dedicated=infra:NoSchedule")
		pod := func(name, tolerations string) string {
			return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  ` + tolerations + `
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`
		}
		n.apply("intolerant.yaml", pod("intolerant", ""))
		n.apply("tolerant.yaml", pod("tolerant", "tolerations: [{key: berth-e2e/dedicated, operator: Equal, value: infra, effect: NoSchedule}]"))
		p := n.waitPod("intolerant", "it is rejected", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		if p.Status.Reason != "TaintToleration" || p.Status.Message != "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate" {
			t.Errorf("intolerant: reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		n.waitPod("tolerant", "it runs", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		if out := n.must("describe", "node"); !regexp.MustCompile(`Taints: +berth-e2e/dedicated=infra:NoSchedule`).MatchString(out) {
			t.Errorf("describe node:\n%s", out)
		}
	})
}

// waitDaemonSet polls a DaemonSet until cond holds.
func (n *node) waitDaemonSet(name, what string, cond func(*appsv1.DaemonSet) bool) {
	n.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceDaemonSet, "default", name)
		if err == nil && cond(detail.DaemonSet) {
			return
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "ds", name)
			pods, _, _ := n.berth("get", "pods")
			n.t.Fatalf("daemonset %s: timed out waiting until %s (last error %v)\n%s\n%s\n%s", name, what, err, desc, pods, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// daemonPods lists the pods a DaemonSet owns that are not terminating.
func (n *node) daemonPods() map[string]v1.Pod {
	n.t.Helper()
	list, err := n.client.ListPods(context.Background(), "default")
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		n.remember(&p)
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func onlyKey(m map[string]v1.Pod) string {
	for k := range m {
		return k
	}
	return ""
}
