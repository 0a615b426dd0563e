package e2e

import (
	"context"
	"regexp"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

const pressureReplicaSet = `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: waiting}
spec:
  replicas: 1
  selector: {matchLabels: {app: waiting}}
  template:
    metadata: {labels: {app: waiting}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

// pressureKeepsReplicaSetPending applies a BestEffort ReplicaSet under
// the pressure condition: its pod waits for the scheduler (Pending,
// PodScheduled False Unschedulable, a FailedScheduling event), the
// ReplicaSet makes no other one over several controller periods, and
// the runtime holds nothing of it. It returns the pod's name.
func pressureKeepsReplicaSetPending(n *node) string {
	n.t.Helper()
	n.apply("waiting.yaml", pressureReplicaSet)
	var name string
	waitOwned(n, "the ReplicaSet's pod is unschedulable", func(p v1.Pod) bool {
		name = p.Name
		c := podConditionOf(p, v1.PodScheduled)
		return p.Status.Phase == v1.PodPending && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
	})
	// An observation window, not a wait: the ReplicaSet runs every second,
	// and a pod rejected and made again would show within it.
	time.Sleep(3 * time.Second)
	if pods := n.ownedPods(); len(pods) != 1 || pods[name].Name != name {
		n.t.Errorf("ReplicaSet pods %v after 3 s, want %s alone", pods, name)
	}
	rs, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceReplicaSet, "default", "waiting")
	if err != nil {
		n.t.Fatal(err)
	}
	creates := 0
	for _, e := range rs.Events {
		if e.Reason == "SuccessfulCreate" {
			creates += e.Count
		}
	}
	if creates != 1 {
		n.t.Errorf("ReplicaSet created %d pods under pressure, want 1: %+v", creates, rs.Events)
	}
	if !n.hasEventSaying(name, "FailedScheduling", "0/1 nodes are available: 1 node(s) had untolerated taint(s).") {
		n.t.Errorf("pod %s has no FailedScheduling event", name)
	}
	if out := n.must("get", "pods", name); !regexp.MustCompile(`(?m)^` + name + ` +0/1 +Pending +0 `).MatchString(out) {
		n.t.Errorf("get pods %s:\n%s", name, out)
	}
	if sandboxes, _ := n.criObjects(map[string]string{podspec.LabelPodName: name}); len(sandboxes) != 0 {
		n.t.Errorf("the runtime holds %d sandboxes of the unscheduled pod", len(sandboxes))
	}
	return name
}

// waitOwned polls the ReplicaSet's pods until one satisfies cond.
func waitOwned(n *node, what string, cond func(v1.Pod) bool) {
	n.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, p := range n.ownedPods() {
			if cond(p) {
				return
			}
		}
		if time.Now().After(deadline) {
			out, _, _ := n.berth("get", "pods")
			n.t.Fatalf("timed out waiting until %s:\n%s", what, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func podConditionOf(p v1.Pod, typ v1.PodConditionType) v1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return v1.PodCondition{}
}
