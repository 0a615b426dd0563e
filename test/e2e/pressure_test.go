package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const pressureBestEffort = `
apiVersion: v1
kind: Pod
metadata: {name: besteffort}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

const pressureBurstable = `
apiVersion: v1
kind: Pod
metadata: {name: burstable}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources: {requests: {memory: 64Mi, ephemeral-storage: 1Gi}}
`

// pressureCase is a threshold no machine here meets the other side of,
// and what the node then reports.
type pressureCase struct {
	threshold string // --eviction-hard
	condition v1.NodeConditionType
	reason    string // the condition's reason when True
	message   string // how the eviction message starts
}

// TestMemoryPressureRejectsAndEvictsInKubeletsOrder restarts the agent
// with a memory threshold no machine meets (memory.available<1Ei): the
// node reports MemoryPressure, a new BestEffort pod is rejected with
// kubelet's status while a ReplicaSet's waits Pending for the scheduler,
// the running BestEffort pod is evicted one round before the Burstable
// one, and with the default thresholds again the condition clears and
// the ReplicaSet's pod runs.
func TestMemoryPressureRejectsAndEvictsInKubeletsOrder(t *testing.T) {
	onEachRuntime(t, func(t *testing.T, n *node) {
		pressureRejectsAndEvicts(t, n, pressureCase{
			threshold: "memory.available<1Ei", condition: v1.NodeMemoryPressure, reason: "KubeletHasInsufficientMemory",
			message: "The node was low on resource: memory. Threshold quantity: 1Ei, available: ",
		})
	})
}

// TestDiskPressureRejectsAndEvictsInKubeletsOrder is the same with the
// node filesystem all but full to the agent (nodefs.available<99.9%):
// node-level reclaim does not relieve it, so pods go, BestEffort first
// (the Burstable pod requests 1Gi of ephemeral storage).
func TestDiskPressureRejectsAndEvictsInKubeletsOrder(t *testing.T) {
	onEachRuntime(t, func(t *testing.T, n *node) {
		pressureRejectsAndEvicts(t, n, pressureCase{
			threshold: "nodefs.available<99.9%", condition: v1.NodeDiskPressure, reason: "KubeletHasDiskPressure",
			message: "The node was low on resource: ephemeral-storage. Threshold quantity: ",
		})
	})
}

func pressureRejectsAndEvicts(t *testing.T, n *node, c pressureCase) {
	if out := n.must("get", "node"); !strings.Contains(out, "Ready") || !strings.Contains(out, "ROLES") {
		t.Fatalf("get node:\n%s", out)
	}
	if st := n.nodeCondition(c.condition); st.Status != v1.ConditionFalse {
		t.Fatalf("%s under the defaults: %+v", c.condition, st)
	}
	n.apply("besteffort.yaml", pressureBestEffort)
	n.apply("burstable.yaml", pressureBurstable)
	n.waitPod("besteffort", "app running", running("app"))
	n.waitPod("burstable", "app running", running("app"))

	n.restartAgentWith("--eviction-hard=" + c.threshold)
	n.waitNode(string(c.condition)+" is True", func(conds []v1.NodeCondition) bool {
		return conditionOf(conds, c.condition).Status == v1.ConditionTrue
	})
	if desc := n.must("describe", "node"); !strings.Contains(desc, c.reason) {
		t.Errorf("describe node lacks %s:\n%s", c.reason, desc)
	}
	evicted := n.waitPod("besteffort", "evicted", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if evicted.Status.Reason != "Evicted" || !strings.HasPrefix(evicted.Status.Message, c.message) {
		t.Errorf("evicted pod: reason %q message %q, want Evicted %q...", evicted.Status.Reason, evicted.Status.Message, c.message)
	}
	n.waitPod("burstable", "evicted in a later round", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	first, second := n.eventTime("besteffort", "Evicted"), n.eventTime("burstable", "Evicted")
	if !first.Before(second) {
		t.Errorf("BestEffort evicted at %s, Burstable at %s: want BestEffort first", first, second)
	}

	n.apply("late.yaml", strings.ReplaceAll(pressureBestEffort, "name: besteffort", "name: late"))
	late := n.waitPod("late", "rejected", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if want := "Pod was rejected: The node had condition: [" + string(c.condition) + "]. "; late.Status.Reason != "Evicted" || late.Status.Message != want {
		t.Errorf("rejected pod: reason %q message %q, want Evicted %q", late.Status.Reason, late.Status.Message, want)
	}
	if !n.hasEvent("late", "Evicted") {
		t.Error("no Evicted event for the rejected pod")
	}
	pressureKeepsReplicaSetPending(n)

	n.restartAgentWith()
	n.waitNode(string(c.condition)+" is False", func(conds []v1.NodeCondition) bool {
		return conditionOf(conds, c.condition).Status == v1.ConditionFalse
	})
	waitOwned(n, "the ReplicaSet's pod runs once the pressure is gone", func(p v1.Pod) bool {
		return podConditionOf(p, v1.PodScheduled).Status == v1.ConditionTrue && running("app")(p)
	})
}

// nodeCondition reads one condition with `berth get node -o json`.
func (n *node) nodeCondition(typ v1.NodeConditionType) v1.NodeCondition {
	n.t.Helper()
	return conditionOf(n.nodeConditions(), typ)
}

func (n *node) nodeConditions() []v1.NodeCondition {
	n.t.Helper()
	out := n.must("get", "node", "-o", "json")
	var node v1.Node
	if err := json.Unmarshal([]byte(out), &node); err != nil {
		n.t.Fatalf("get node -o json: %v\n%s", err, out)
	}
	return node.Status.Conditions
}

func conditionOf(conds []v1.NodeCondition, typ v1.NodeConditionType) v1.NodeCondition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return v1.NodeCondition{}
}

// waitNode polls the node's conditions until ok holds, for up to a minute.
func (n *node) waitNode(what string, ok func([]v1.NodeCondition) bool) {
	n.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		conds := n.nodeConditions()
		if ok(conds) {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node: timed out waiting until %s: %+v\n%s", what, conds, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eventTime is when the pod's event with reason first happened.
func (n *node) eventTime(pod, reason string) time.Time {
	n.t.Helper()
	detail, err := n.client.DescribePod(n.t.Context(), "default", pod)
	if err != nil {
		n.t.Fatalf("pod %s: %v", pod, err)
	}
	for _, e := range detail.Events {
		if e.Reason == reason {
			return e.FirstTime
		}
	}
	n.t.Fatalf("pod %s has no %s event: %+v", pod, reason, detail.Events)
	return time.Time{}
}
