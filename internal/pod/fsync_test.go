package pod

import (
	"context"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/store"
)

// TestPodLifecycleFlushesOnlyIntents counts the fsyncs of a pod's life on
// the fakes: a start (RunSandbox, CreateContainer, StartContainer) flushes
// the two records' first writes, "creating", file and directory each, and
// each later state once (ready; created, running), nothing under the state
// directory; its removal flushes the two "removing" intents fully and the
// exit and "notready" updates once.
func TestPodLifecycleFlushesOnlyIntents(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	s.cfg.Images = oneImage{}
	ctx := context.Background()

	before := store.Fsyncs()
	sbID, err := s.RunSandbox(ctx, goodSandboxConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateContainer(ctx, sbID, appConfig(), goodSandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := store.Fsyncs() - before; n != 7 {
		t.Errorf("a pod start made %d fsyncs, want 7 (two intent records, file and directory; three updates, file only)", n)
	}
	var sb Sandbox
	var c Container
	if err := store.LoadJSON(s.sandboxRecordPath(sbID), &sb); err != nil || sb.State != SandboxReady {
		t.Errorf("sandbox record %q, %v; want ready", sb.State, err)
	}
	if err := store.LoadJSON(s.containerRecordPath(id), &c); err != nil || c.State != ContainerRunning {
		t.Errorf("container record %q, %v; want running", c.State, err)
	}

	writeExit(t, s, id, 0, time.Now())
	before = store.Fsyncs()
	if err := s.RemoveSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if n := store.Fsyncs() - before; n != 6 {
		t.Errorf("a pod removal made %d fsyncs, want 6 (two removing intents, file and directory; the exit and notready updates, file only)", n)
	}
}
