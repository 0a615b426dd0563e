package agent

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/probe"
	"github.com/berth-dev/berth/internal/agent/sourcestore"
)

// soloWorker is one pod's worker on its own: syncDeps around the fake
// runtime, fake volumes, a sources store in a temp dir and a fake clock.
// No Agent, no desired-state bookkeeping, no goroutine: the test calls
// sync and reads the runtime's calls.
type soloWorker struct {
	*podWorker
	rt      *criclienttest.Runtime
	volumes *fakeVolumes
	seen    int // calls already returned by newCalls
}

func newSoloWorker(t *testing.T, rt *criclienttest.Runtime, yaml string) *soloWorker {
	t.Helper()
	dir := t.TempDir()
	sources, err := sourcestore.Open(filepath.Join(dir, "sources"))
	if err != nil {
		t.Fatal(err)
	}
	probes := probe.NewManager(rt, probe.Options{SecondsUnit: 10 * time.Millisecond})
	t.Cleanup(probes.Close)
	vols := &fakeVolumes{root: dir + "/root"}
	deps := &syncDeps{
		runtime: rt, images: rt, volumes: vols, sources: sources, probes: probes,
		crashBackoff: backoff.New(backoff.Config{}), pullBackoff: backoff.New(backoff.Config{}),
		clock:   clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		log:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		rootDir: dir + "/root", podLogDir: dir + "/logs",
		containerGC: DefaultContainerGCPolicy(),
	}
	pods := bundle(t, yaml).Pods
	if len(pods) != 1 {
		t.Fatalf("want one pod in the manifest, got %d", len(pods))
	}
	return &soloWorker{podWorker: newPodWorker(deps, desiredPod{pod: pods[0].Pod}), rt: rt, volumes: vols}
}

// syncOnce runs one sync and returns the runtime calls it made.
func (w *soloWorker) syncOnce(t *testing.T) (calls []string, finished bool) {
	t.Helper()
	_, finished = w.sync(context.Background())
	all := w.rt.Calls()
	calls, w.seen = all[w.seen:], len(all)
	return calls, finished
}

const executorPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
  - {name: setup, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
  - {name: proxy, image: busybox, imagePullPolicy: IfNotPresent, restartPolicy: Always, command: [sleep, "1000"]}
  - {name: logger, image: busybox, imagePullPolicy: IfNotPresent, restartPolicy: Always, command: [sleep, "1000"]}
  containers:
  - {name: app, image: alpine, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// Each sync executes the plan in the kubelet's SyncPod order against the
// runtime: the sandbox, then init containers and sidecars one per sync,
// then the regular containers (pulling an image the runtime lacks first);
// a sync with nothing to do calls nothing that changes the runtime.
func TestSyncExecutesThePlanInOrder(t *testing.T) {
	w := newSoloWorker(t, criclienttest.New(), executorPod)
	steps := [][]string{
		{"runp web", "create setup", "start setup"},
		{"create proxy", "start proxy"},
		{"create logger", "start logger"},
		{"pull alpine", "create app", "start app"},
		nil,
	}
	for i, want := range steps {
		calls, finished := w.syncOnce(t)
		if !slices.Equal(calls, want) || finished {
			t.Fatalf("sync %d: calls %q, finished %v; want %q, not finished", i+1, calls, finished, want)
		}
	}
	if w.volumesVersion != 0 {
		t.Errorf("volumes set up for sources version %d; want 0", w.volumesVersion)
	}
}

// A deleted pod is stopped in plan.StopOrder — the regular containers,
// then the sidecars in reverse order —, then its sandbox is stopped and
// removed, its volumes torn down, and the worker is finished.
func TestTerminationStopsInStopOrderThenRemovesThePod(t *testing.T) {
	w := newSoloWorker(t, criclienttest.New(), executorPod)
	for range 4 {
		w.syncOnce(t)
	}
	grace := int64(5)
	w.beginTermination(&grace, "Killing", "deleted")
	calls, finished := w.syncOnce(t)
	want := []string{"stop app", "stop logger", "stop proxy", "stopp web", "rmp web"}
	if !slices.Equal(calls, want) || !finished {
		t.Fatalf("terminating sync: calls %q, finished %v; want %q, finished", calls, finished, want)
	}
	if sandboxes, containers := w.rt.Counts(); sandboxes != 0 || containers != 0 {
		t.Errorf("the runtime still holds %d sandboxes, %d containers", sandboxes, containers)
	}
	if !slices.Contains(w.volumes.torndown, w.uid) {
		t.Errorf("volumes of %s not torn down", w.uid)
	}
}
