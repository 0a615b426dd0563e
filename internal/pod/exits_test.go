package pod

import (
	"log/slog"
	"testing"
	"time"

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
