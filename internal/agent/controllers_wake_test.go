package agent

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// The workload controllers follow their pods without their tick: on a
// clock that never moves, a Deployment's pods becoming ready make it
// available, and a changed image rolls it out to the end (each new pod's
// readiness lets the next old one go, each ReplicaSet count reaches the
// Deployment), and its deletion removes every pod and record.
func TestControllersFollowPodsWithoutTheirTick(t *testing.T) {
	rt := criclienttest.New()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, vols := newTestAgent(t, rt, t.TempDir(), clk)
	ta := runTestAgent(t, a, vols)

	ta.apply(t, webDeployment)
	waitFor(t, "3 of 3 available", func() bool {
		d := ta.deployment(t)
		return d.Status.AvailableReplicas == 3 && d.Status.ReadyReplicas == 3 && d.Status.UpdatedReplicas == 3
	})

	ta.apply(t, strings.Replace(webDeployment, "busybox:1", "busybox:2", 1))
	waitFor(t, "the rollout to busybox:2 done", func() bool {
		d := ta.deployment(t)
		if d.Status.ObservedGeneration != 2 || d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 || d.Status.Replicas != 3 {
			return false
		}
		pods := ta.ownedPods("ReplicaSet")
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "busybox:2" {
				return false
			}
		}
		return len(pods) == 3 && readyCount(pods) == 3
	})

	if _, err := ta.DeleteWorkload(t.Context(), agentapi.ResourceDeployment, "default", "web", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment, its ReplicaSets and pods gone", func() bool {
		ta.mu.Lock()
		workloads := len(ta.workloads)
		ta.mu.Unlock()
		return len(ta.ListPods("").Items) == 0 && workloads == 0
	})
}
