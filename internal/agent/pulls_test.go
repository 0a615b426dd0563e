package agent

import (
	"context"
	"errors"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// watchingImages is an image service that reports progress, as berth
// serve's does: every pull sends events to the watchers of its reference.
type watchingImages struct {
	*criclienttest.Runtime
	events []criclient.PullEvent

	mu       sync.Mutex
	watchers map[string]func(criclient.PullEvent)
	stopped  int
}

func (w *watchingImages) WatchPull(ref string, fn func(criclient.PullEvent)) (func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchers[ref] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.watchers, ref)
		w.stopped++
	}, nil
}

func (w *watchingImages) PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	w.mu.Lock()
	fn := w.watchers[ref]
	w.mu.Unlock()
	for _, ev := range w.events {
		if fn != nil {
			fn(ev)
		}
	}
	return w.Runtime.PullImage(ctx, ref, auth, sb)
}

// runAgentWithImages runs an agent of rt whose image service is images.
func runAgentWithImages(t *testing.T, rt *criclienttest.Runtime, images criclient.Images) *testAgent {
	t.Helper()
	a, vols := newTestAgent(t, rt, t.TempDir(), clock.RealClock{})
	a.deps.images = images
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent Run: %v", err)
		}
	})
	waitFor(t, "the agent is ready", func() bool { return a.checkReady() == nil })
	return &testAgent{Agent: a, volumes: vols, stop: cancel}
}

const pullingPods = `
apiVersion: v1
kind: Pod
metadata: {name: pulled}
spec:
  containers:
  - {name: app, image: remote, imagePullPolicy: Always, command: [sleep, "1000"]}
---
apiVersion: v1
kind: Pod
metadata: {name: present}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// On a runtime that reports progress the pod's pull lists its layers and
// bytes; a pod whose image was present lists no pull.
func TestPullsOfAWatchingRuntime(t *testing.T) {
	rt := criclienttest.New()
	images := &watchingImages{Runtime: rt, watchers: map[string]func(criclient.PullEvent){}, events: []criclient.PullEvent{
		{Layer: "sha256:a", State: "downloading", Done: 100, Total: 300},
		{Layer: "sha256:b", State: "exists", Done: 50, Total: 50},
		{Layer: "sha256:a", State: "done", Done: 300, Total: 300},
	}}
	a := runAgentWithImages(t, rt, images)
	uid := a.apply(t, pullingPods).Pods()[0].UID
	waitFor(t, "pulled pulls", func() bool {
		list := a.Pulls("default").Items
		return len(list) == 1 && list[0].State == agentapi.PullDone
	})
	got := a.Pulls("").Items[0]
	if got.Pod != "pulled" || got.Namespace != "default" || got.PodUID != uid || got.Image != "remote" {
		t.Errorf("pull of %s/%s (uid %s) image %q; want default/pulled (uid %s) image remote", got.Namespace, got.Pod, got.PodUID, got.Image, uid)
	}
	if !got.Detailed || got.LayersDone != 2 || got.LayersTotal != 2 || got.BytesDone != 300 || got.BytesTotal != 300 {
		t.Errorf("pull %+v: want detailed, 2 of 2 layers, 300 of 300 bytes", got)
	}
	if n := len(a.Pulls("other").Items); n != 0 {
		t.Errorf("namespace other lists %d pulls", n)
	}
	images.mu.Lock()
	defer images.mu.Unlock()
	if len(images.watchers) != 0 || images.stopped != 1 {
		t.Errorf("%d watchers left, %d stopped; want the pull's one stopped", len(images.watchers), images.stopped)
	}
}

// Over plain CRI a pull says only that it started and ended, and why it
// failed.
func TestPullsOverPlainCRI(t *testing.T) {
	rt := criclienttest.New()
	rt.SetPullError(errors.New("registry unreachable"))
	a := startTestAgent(t, rt)
	a.apply(t, pullingPods)
	waitFor(t, "the pull fails", func() bool {
		list := a.Pulls("default").Items
		return len(list) == 1 && list[0].State == agentapi.PullFailed
	})
	got := a.Pulls("default").Items[0]
	if got.Detailed || got.LayersTotal != 0 || got.BytesDone != 0 || got.Error == "" || got.Ended.IsZero() {
		t.Errorf("failed pull %+v: want undetailed, no layers or bytes, its error and end", got)
	}
	rt.SetPullError(nil)
	waitFor(t, "the retried pull is done", func() bool {
		list := a.Pulls("default").Items
		return len(list) == 1 && list[0].State == agentapi.PullDone && list[0].Error == ""
	})
}
