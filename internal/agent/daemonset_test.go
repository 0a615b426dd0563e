package agent

import (
	"regexp"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/workload"
)

const loggerDaemonSet = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logger}
spec:
  selector: {matchLabels: {app: logger}}
  template:
    metadata: {labels: {app: logger}}
    spec:
      nodeSelector: {disk: ssd}
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: busybox:1, command: [sleep, "1000"]}
`

// startLabelledAgent runs an agent in dir with the node's labels.
func startLabelledAgent(t *testing.T, rt *criclienttest.Runtime, dir string, labels map[string]string) *testAgent {
	t.Helper()
	a, vols := newTestAgentWith(t, rt, dir, clock.RealClock{}, func(c *Config) { c.NodeLabels = labels })
	return runTestAgent(t, a, vols)
}

func (a *testAgent) daemonSet(t *testing.T) agentapi.WorkloadDetail {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceDaemonSet, "default", "logger")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDaemonSetFollowsTheNodesLabels(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startLabelledAgent(t, rt, dir, nil)
	first.apply(t, loggerDaemonSet)
	waitFor(t, "the DaemonSet observed", func() bool { return first.daemonSet(t).DaemonSet.Status.ObservedGeneration == 1 })
	if s := first.daemonSet(t).DaemonSet.Status; s.DesiredNumberScheduled != 0 || len(first.ownedPods("DaemonSet")) != 0 {
		t.Fatalf("a node without disk=ssd: status %+v, pods %v", s, first.ownedPods("DaemonSet"))
	}
	first.stop()

	second := startLabelledAgent(t, rt, dir, map[string]string{"disk": "ssd"})
	waitFor(t, "the pod runs and is counted", func() bool {
		s := second.daemonSet(t).DaemonSet.Status
		return s.DesiredNumberScheduled == 1 && s.NumberReady == 1 && s.UpdatedNumberScheduled == 1 && s.NumberAvailable == 1 && s.CurrentNumberScheduled == 1
	})
	pods := second.ownedPods("DaemonSet")
	if len(pods) != 1 {
		t.Fatalf("pods %v", pods)
	}
	var first0 v1.Pod
	for name, p := range pods {
		first0 = p
		hash := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		if !regexp.MustCompile(`^logger-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(name) || hash == "" || p.Spec.NodeName != "node-1" ||
			len(p.Spec.Tolerations) != 6 || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "node-1" {
			t.Fatalf("pod %s: labels %v spec %+v", name, p.Labels, p.Spec)
		}
	}
	if _, err := second.Rollout(t.Context(), agentapi.ResourceDaemonSet, "default", "logger", agentapi.RolloutRequest{Restart: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restart replaces the pod", func() bool {
		for name, p := range second.ownedPods("DaemonSet") {
			if name != first0.Name && ready(p) && p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != first0.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] {
				return second.daemonSet(t).DaemonSet.Status.UpdatedNumberScheduled == 1
			}
		}
		return false
	})
	if _, err := second.Scale(t.Context(), agentapi.ResourceDaemonSet, "default", "logger", 3); err == nil {
		t.Error("a DaemonSet was scaled")
	}
	second.stop()

	third := startLabelledAgent(t, rt, dir, nil)
	waitFor(t, "the label gone, the pod goes", func() bool {
		s := third.daemonSet(t).DaemonSet.Status
		return len(third.ownedPods("DaemonSet")) == 0 && s.DesiredNumberScheduled == 0
	})
	if _, err := third.DeleteWorkload(t.Context(), agentapi.ResourceDaemonSet, "default", "logger", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the DaemonSet is forgotten", func() bool {
		third.mu.Lock()
		defer third.mu.Unlock()
		return len(third.workloads) == 0
	})
}

func TestFailedDaemonPodsBackOff(t *testing.T) {
	b := backoff.New(daemonFailedBackoff)
	t0 := time.Unix(1000, 0)
	failed := []workload.DaemonPod{{Pod: workload.Pod{Name: "f", Phase: v1.PodFailed}}, {Pod: workload.Pod{Name: "r", Phase: v1.PodRunning}}}
	steps := []struct {
		at   time.Duration
		want []string
	}{
		{0, []string{"f", "r"}},                 // the first failure goes at once; 1 s from now
		{500 * time.Millisecond, []string{"r"}}, // held
		{time.Second, []string{"f", "r"}},       // then 2 s
		{2 * time.Second, []string{"r"}},        // held
		{3 * time.Second, []string{"f", "r"}},   // then 4 s
		{6 * time.Second, []string{"r"}},        // held
	}
	for _, s := range steps {
		if got := holdFailedDaemonPods(b, "ds", []string{"f", "r"}, failed, t0.Add(s.at)); !slices.Equal(got, s.want) {
			t.Errorf("at %s: delete %v, want %v", s.at, got, s.want)
		}
	}
	if got := holdFailedDaemonPods(b, "other", []string{"f"}, failed, t0.Add(6*time.Second)); !slices.Equal(got, []string{"f"}) {
		t.Errorf("another DaemonSet's back-off: %v", got)
	}
}
