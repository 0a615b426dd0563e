package podcgroup

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupInUse(t *testing.T) {
	dir := t.TempDir()
	if busy, err := cgroupInUse(filepath.Join(dir, "missing")); busy || err != nil {
		t.Errorf("missing: %v, %v; want not in use", busy, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if busy, err := cgroupInUse(dir); busy || err != nil {
		t.Errorf("empty: %v, %v; want not in use", busy, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if busy, err := cgroupInUse(dir); !busy || err != nil {
		t.Errorf("a process: %v, %v; want in use", busy, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "berth-c1.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	if busy, err := cgroupInUse(dir); !busy || err != nil {
		t.Errorf("a child cgroup: %v, %v; want in use", busy, err)
	}
}
