package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

func (a *testAgent) rollout(t *testing.T, req agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	t.Helper()
	return a.Rollout(context.Background(), agentapi.ResourceDeployment, "default", "web", req)
}

// replicaSetNames lists the Deployment's live ReplicaSets.
func (a *testAgent) replicaSetNames(t *testing.T) []string {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceDeployment, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range d.ReplicaSets {
		out = append(out, rs.Name)
	}
	return out
}

func progressingReason(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason
		}
	}
	return ""
}

// pausedSettled: the controller saw the latest spec of a paused
// Deployment.
func pausedSettled(a *testAgent, t *testing.T, replicas int) func() bool {
	return func() bool {
		d := a.deployment(t)
		return d.Status.ObservedGeneration == d.Generation && progressingReason(d) == workload.ReasonPaused &&
			d.Status.AvailableReplicas == int32(replicas) && readyCount(a.ownedPods("ReplicaSet")) == replicas
	}
}

// rolledOut: every replica runs image and the rollout is complete.
func rolledOut(a *testAgent, t *testing.T, image string, replicas int) func() bool {
	return func() bool {
		d := a.deployment(t)
		pods := a.ownedPods("ReplicaSet")
		for _, p := range pods {
			if p.Spec.Containers[0].Image != image {
				return false
			}
		}
		return len(pods) == replicas && workload.Complete(d, &d.Status) && progressingReason(d) == workload.ReasonNewRSAvailable
	}
}

// Pause holds a template change (no ReplicaSet, no revision) but not a
// scale, refuses restart and undo, survives a restart of the agent; resume
// rolls the change out; a re-applied manifest sets paused only when it
// names the field.
func TestPausedDeploymentAcrossARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, webDeployment)
	waitFor(t, "revision 1 rolled out", rolledOut(first, t, "busybox:1", 3))

	if r, err := first.rollout(t, agentapi.RolloutRequest{Pause: true}); err != nil || r.Outcome != "paused" {
		t.Fatalf("pause: %+v %v", r, err)
	}
	_, err := first.rollout(t, agentapi.RolloutRequest{Pause: true})
	if err == nil || err.Error() != `deployments.apps "web" is already paused` || !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Fatalf("pausing a paused Deployment: %v", err)
	}
	if _, err := first.rollout(t, agentapi.RolloutRequest{Restart: true}); err == nil || err.Error() != `deployments.apps "web" can't restart paused deployment (run rollout resume first)` {
		t.Fatalf("restarting a paused Deployment: %v", err)
	}
	waitFor(t, "the pause observed", pausedSettled(first, t, 3))
	before := first.ownedPods("ReplicaSet")

	// A changed template and a scale while paused: the scale alone applies.
	first.apply(t, strings.Replace(strings.Replace(webDeployment, "busybox:1", "busybox:2", 1), "replicas: 3", "replicas: 3\n  paused: true", 1))
	if _, err := first.Scale(context.Background(), agentapi.ResourceDeployment, "default", "web", 4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "4 replicas of the old template", pausedSettled(first, t, 4))
	after := first.ownedPods("ReplicaSet")
	for name, p := range after {
		if p.Spec.Containers[0].Image != "busybox:1" {
			t.Fatalf("pod %s runs %s while paused", name, p.Spec.Containers[0].Image)
		}
	}
	for name := range before {
		if _, kept := after[name]; !kept {
			t.Fatalf("pod %s went while paused: %v", name, keys(after))
		}
	}
	d := first.deployment(t)
	if sets := first.replicaSetNames(t); len(sets) != 1 || d.Annotations[workload.RevisionAnnotation] != "1" || d.Status.UpdatedReplicas != 0 {
		t.Fatalf("paused with a changed template: ReplicaSets %v, revision %q, status %+v", sets, d.Annotations[workload.RevisionAnnotation], d.Status)
	}
	if _, err := first.rollout(t, agentapi.RolloutRequest{Undo: true}); err == nil || !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("undo without a previous revision: %v", err)
	}
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the restarted agent reports the paused Deployment", pausedSettled(second, t, 4))
	if d := second.deployment(t); !d.Spec.Paused || len(second.replicaSetNames(t)) != 1 {
		t.Fatalf("after the restart: paused %v, ReplicaSets %v", d.Spec.Paused, second.replicaSetNames(t))
	}
	if r, err := second.rollout(t, agentapi.RolloutRequest{Resume: true}); err != nil || r.Outcome != "resumed" {
		t.Fatalf("resume: %+v %v", r, err)
	}
	if _, err := second.rollout(t, agentapi.RolloutRequest{Resume: true}); err == nil || err.Error() != `deployments.apps "web" is not paused` {
		t.Fatalf("resuming a Deployment that is not paused: %v", err)
	}
	waitFor(t, "revision 2 rolled out after the resume", rolledOut(second, t, "busybox:2", 4))
	if d := second.deployment(t); d.Annotations[workload.RevisionAnnotation] != "2" {
		t.Fatalf("after the resume: revision %q", d.Annotations[workload.RevisionAnnotation])
	}

	// Paused again, undo is refused (a previous revision exists now).
	second.rollout(t, agentapi.RolloutRequest{Pause: true}) //nolint:errcheck // checked by the undo's error
	if _, err := second.rollout(t, agentapi.RolloutRequest{Undo: true}); err == nil || !strings.HasPrefix(err.Error(), "you cannot rollback a paused deployment; resume it first") {
		t.Fatalf("undo of a paused Deployment: %v", err)
	}
	// A manifest that leaves paused out keeps the pause, as kubectl apply
	// does; one that says paused: false resumes, and the new template
	// rolls (the revision 3 ReplicaSet is made).
	second.apply(t, strings.Replace(webDeployment, "busybox:1", "busybox:3", 1))
	if d := second.deployment(t); !d.Spec.Paused || len(second.replicaSetNames(t)) != 2 {
		t.Fatalf("re-applied without paused: paused %v, ReplicaSets %v; want still paused, no new one", d.Spec.Paused, second.replicaSetNames(t))
	}
	second.apply(t, strings.Replace(strings.Replace(webDeployment, "busybox:1", "busybox:3", 1), "replicas: 3", "replicas: 3\n  paused: false", 1))
	waitFor(t, "revision 3 rolling after the re-apply", func() bool {
		d := second.deployment(t)
		return !d.Spec.Paused && d.Annotations[workload.RevisionAnnotation] == "3" && len(second.replicaSetNames(t)) == 3
	})
}

func TestDaemonSetHasNoPause(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, loggerDaemonSet)
	_, err := a.Rollout(context.Background(), agentapi.ResourceDaemonSet, "default", "logger", agentapi.RolloutRequest{Pause: true})
	if err == nil || err.Error() != `daemonsets.apps "logger" pausing is not supported` {
		t.Fatalf("pausing a DaemonSet: %v", err)
	}
	_, err = a.Rollout(context.Background(), agentapi.ResourceDaemonSet, "default", "logger", agentapi.RolloutRequest{Resume: true})
	if err == nil || err.Error() != `daemonsets.apps "logger" resuming is not supported` {
		t.Fatalf("resuming a DaemonSet: %v", err)
	}
	if _, err := a.Rollout(context.Background(), agentapi.ResourceDaemonSet, "default", "logger", agentapi.RolloutRequest{Pause: true, Restart: true}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("pause and restart at once: %v", err)
	}
}
