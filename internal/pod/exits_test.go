package pod

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/monitor"
)

// TestExitWatcherStopsReadingOnClose checks that close ends the watcher's
// read: a read left blocked on a closed descriptor would later read
// whatever file reuses the number as inotify events (and did panic).
func TestExitWatcherStopsReadingOnClose(t *testing.T) {
	dir := t.TempDir()
	seen := make(chan string, 1)
	w, err := newExitWatcher(dir, slog.New(slog.DiscardHandler), func(id string) { seen <- id })
	if err != nil {
		t.Fatal(err)
	}
	id := testID("c")
	if err := monitor.WriteExitFile(dir, monitor.ExitRecord{ID: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != id {
			t.Fatalf("exit of %q, want %q", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit file not seen")
	}
	w.close()
	select {
	case <-w.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("exit watcher still reading 10s after close")
	}
}

// TestExitWatcherPollsWithoutInotify: when no inotify instance can be made
// (the uid's fs.inotify.max_user_instances is used up), the watcher does
// not fail, so recovery goes on: it polls the exits directory, hands on an
// exit file written while it polls (not one that was there before: recovery
// reads those) and says why in the log.
func TestExitWatcherPollsWithoutInotify(t *testing.T) {
	saved := inotifyInit
	t.Cleanup(func() { inotifyInit = saved })
	inotifyInit = func(int) (int, error) { return -1, unix.EMFILE }
	dir := t.TempDir()
	old := testID("a")
	if err := monitor.WriteExitFile(dir, monitor.ExitRecord{ID: old}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	seen := make(chan string, 4)
	w, err := newExitWatcher(dir, slog.New(slog.NewTextHandler(&logs, nil)), func(id string) { seen <- id })
	if err != nil {
		t.Fatalf("exit watcher without inotify: %v", err)
	}
	defer w.close()
	if !strings.Contains(logs.String(), "polling the exits directory") || !strings.Contains(logs.String(), "too many open files") {
		t.Errorf("log %q does not say the watcher polls, and why", logs.String())
	}
	id := testID("c")
	if err := monitor.WriteExitFile(dir, monitor.ExitRecord{ID: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != id {
			t.Fatalf("exit of %q, want %q", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit file not seen by polling within 10s")
	}
	w.close()
	select {
	case <-w.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("exit watcher still polling 10s after close")
	}
	if len(seen) != 0 {
		t.Errorf("exit of %q handed on again", <-seen)
	}
}

// TestPauseExitWarnsOnlyWhenUnexpected: berth-pause exiting under a ready
// sandbox is news (a warning); while the sandbox is being stopped it is
// the stop's own doing (debug). Either way the sandbox is not ready.
func TestPauseExitWarnsOnlyWhenUnexpected(t *testing.T) {
	for _, stopping := range []bool{false, true} {
		f := newFakeWorld()
		s := newFakeService(t, t.TempDir(), t.TempDir(), f)
		var logs bytes.Buffer
		s.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		id, err := s.RunSandbox(t.Context(), goodSandboxConfig(), "")
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.findSandbox(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.updateSandbox(e, func(r *Sandbox) bool { r.PausePid = 4242; return true }); err != nil {
			t.Fatal(err)
		}
		e.stopping.Store(stopping)
		s.handleExitFile(id)
		want := `level=WARN msg="berth-pause exited; pod sandbox not ready"`
		if stopping {
			want = `level=DEBUG msg="berth-pause exited (pod sandbox stopping)"`
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("stopping=%v: log %q, want %s", stopping, logs.String(), want)
		}
		if st := e.snapshot().State; st != SandboxNotReady {
			t.Errorf("stopping=%v: state %s, want notready", stopping, st)
		}
	}
}
