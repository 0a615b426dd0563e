package pod

import (
	"os"
	"path/filepath"
	"testing"
)

// The container filesystem's usage is a walk of <root>/containers, reused
// while it is fresh.
func TestWritableLayersUsageWalksTheContainersDir(t *testing.T) {
	s := newTestService(t)
	upper := filepath.Join(s.containersDir(), "c1", "upper")
	if err := os.MkdirAll(upper, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper, "data"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	du, err := s.WritableLayersUsage()
	if err != nil {
		t.Fatal(err)
	}
	if du.Path != s.containersDir() || du.Bytes < 1<<20 || du.Inodes < 4 || du.Time.IsZero() {
		t.Fatalf("usage %+v; want %s with at least 1 MiB and 4 inodes", du, s.containersDir())
	}
	if err := os.WriteFile(filepath.Join(upper, "more"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := s.WritableLayersUsage()
	if err != nil || again != du {
		t.Fatalf("second call %+v, %v; want the cached %+v", again, err, du)
	}
}
