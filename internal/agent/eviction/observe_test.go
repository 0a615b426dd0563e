package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fakeHost(t *testing.T) (HostObserver, string) {
	dir := t.TempDir()
	proc := filepath.Join(dir, "proc")
	writeFile(t, filepath.Join(proc, "meminfo"), "MemTotal:       1048576 kB\nMemFree:         524288 kB\nInactive(file):  131072 kB\n")
	writeFile(t, filepath.Join(proc, "sys/kernel/pid_max"), "4194304\n")
	writeFile(t, filepath.Join(proc, "sys/kernel/threads-max"), "1000\n")
	h := HostObserver{
		NodeFsPath: "/nodefs", ProcDir: proc, CgroupDir: filepath.Join(dir, "cgroup"),
		Statfs: func(path string) (FsStats, error) {
			if path == "/nodefs" {
				return FsStats{Capacity: 1000, Available: 50, Inodes: 100, InodesFree: 3}, nil
			}
			return FsStats{Capacity: 2000, Available: 1500, Inodes: 200, InodesFree: 150}, nil
		},
		Processes:   func() (int64, error) { return 250, nil },
		ImageFsPath: func(context.Context) (string, error) { return "/imagefs", nil },
	}
	return h, dir
}

func TestHostObserverCgroupV2ReadsMeminfo(t *testing.T) {
	h, _ := fakeHost(t)
	obs, err := h.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Working set: (1Gi - 512Mi) - 128Mi = 384Mi; available 640Mi.
	if got := obs[SignalMemoryAvailable]; got.Capacity != 1<<30 || got.Available != 640*mi {
		t.Errorf("memory.available %+v, want 640Mi of 1Gi", got)
	}
	if got := obs[SignalNodeFsAvailable]; got.Available != 50 || got.Capacity != 1000 {
		t.Errorf("nodefs.available %+v", got)
	}
	if got := obs[SignalNodeFsInodesFree]; got.Available != 3 || got.Capacity != 100 {
		t.Errorf("nodefs.inodesFree %+v", got)
	}
	if got := obs[SignalImageFsAvailable]; got.Available != 1500 {
		t.Errorf("imagefs.available %+v", got)
	}
	if got := obs[SignalPIDAvailable]; got.Capacity != 1000 || got.Available != 750 {
		t.Errorf("pid.available %+v, want 750 of threads-max 1000", got)
	}
}

func TestHostObserverCgroupV1ReadsTheMemoryRoot(t *testing.T) {
	h, dir := fakeHost(t)
	writeFile(t, filepath.Join(dir, "cgroup/memory/memory.usage_in_bytes"), "314572800\n")
	writeFile(t, filepath.Join(dir, "cgroup/memory/memory.stat"), "cache 1\ntotal_inactive_file 104857600\n")
	obs, err := h.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Working set: 300Mi - 100Mi = 200Mi; available 824Mi.
	if got := obs[SignalMemoryAvailable]; got.Available != 824*mi {
		t.Errorf("memory.available %+v, want 824Mi", got)
	}
}

func TestHostObserverLeavesOutWhatItCannotRead(t *testing.T) {
	h, _ := fakeHost(t)
	h.ImageFsPath = func(context.Context) (string, error) { return "", errors.New("no image filesystem") }
	obs, err := h.Observe(context.Background())
	if err == nil {
		t.Fatal("no error for the imagefs failure")
	}
	if _, ok := obs[SignalImageFsAvailable]; ok {
		t.Error("imagefs observed although unreadable")
	}
	if _, ok := obs[SignalNodeFsAvailable]; !ok {
		t.Error("nodefs lost with imagefs")
	}
}

func TestHostObserverReadsThisHost(t *testing.T) {
	obs, err := HostObserver{NodeFsPath: t.TempDir()}.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalPIDAvailable} {
		if o := obs[s]; o.Capacity <= 0 || o.Available > o.Capacity {
			t.Errorf("%s: %+v", s, o)
		}
	}
}
