package agent

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// observedAt reports whether the pod's status and every condition the
// agent sets carry generation as their observedGeneration.
func observedAt(pod v1.Pod, generation int64) bool {
	if pod.Status.ObservedGeneration != generation || len(pod.Status.Conditions) == 0 {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.ObservedGeneration != generation {
			return false
		}
	}
	return true
}

// metadata.generation moves as the API server moves it — 1 at creation,
// one more for a spec change (ephemeral containers added) and for the
// deletion — and the status (status.observedGeneration and the
// conditions') follows the generation the agent acted on (KEP-5067),
// across an agent restart too.
func TestPodGenerationAndObservedGeneration(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, debugTargetPod)
	waitFor(t, "app runs, status at generation 1", func() bool {
		p := first.pod(t, "web")
		return p.Generation == 1 && ctrStatus(p, "app").State.Running != nil && observedAt(p, 1)
	})
	pod, err := first.UpdateEphemeralContainers(context.Background(), "default", "web", []v1.EphemeralContainer{debugger("debugger-abcde", "app")})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 2 {
		t.Errorf("after adding an ephemeral container: generation %d; want 2", pod.Generation)
	}
	waitFor(t, "the status at generation 2", func() bool { return observedAt(first.pod(t, "web"), 2) })
	if _, err := first.UpdateEphemeralContainers(context.Background(), "default", "web", pod.Spec.EphemeralContainers); err != nil {
		t.Fatal(err)
	}
	if g := first.pod(t, "web").Generation; g != 2 {
		t.Errorf("the same list again: generation %d; want 2 (no change)", g)
	}
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the restarted agent at generation 2", func() bool {
		p := second.pod(t, "web")
		return p.Generation == 2 && observedAt(p, 2)
	})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	rt.HoldStop("app", release) // the deletion holds while app stops
	grace := int64(30)
	if _, err := second.Delete(context.Background(), "default", "web", &grace); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the terminating pod's status at generation 3", func() bool {
		p := second.pod(t, "web")
		return p.Generation == 3 && p.DeletionTimestamp != nil && observedAt(p, 3)
	})
}
