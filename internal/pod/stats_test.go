package pod

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/errdefs"
)

func TestDiskUsageCountsHardLinksOnceAndGrows(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := diskUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if before.Inodes != 2 {
		t.Errorf("inodes = %d, want 2 (root and etc)", before.Inodes)
	}
	big := filepath.Join(root, "etc", "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(big, filepath.Join(root, "twin")); err != nil {
		t.Fatal(err)
	}
	after, err := diskUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if after.Inodes != 3 {
		t.Errorf("inodes = %d, want 3 (a hard link is one inode)", after.Inodes)
	}
	if grown := after.Bytes - before.Bytes; grown < 1<<20 || grown > 1<<20+64<<10 {
		t.Errorf("bytes grew by %d, want about 1 MiB counted once", grown)
	}
}

func TestDiskUsageOfMissingDirIsNotFound(t *testing.T) {
	if _, err := diskUsage(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestAddUsageSumsOnlyContainersWithUsage(t *testing.T) {
	var pod SandboxStats
	addUsage(&pod, &ContainerStats{HasUsage: true, HasNanoCores: true, NanoCores: 5,
		Usage: cgroupstats.Sample{CPUUsageNanos: 10, MemoryWorkingSet: 100, Pids: 1}})
	addUsage(&pod, &ContainerStats{HasUsage: false, Usage: cgroupstats.Sample{CPUUsageNanos: 1000, Pids: 9}})
	addUsage(&pod, &ContainerStats{HasUsage: true, Usage: cgroupstats.Sample{CPUUsageNanos: 20, MemoryWorkingSet: 50, Pids: 2}})
	if pod.Usage.CPUUsageNanos != 30 || pod.Usage.MemoryWorkingSet != 150 || pod.Usage.Pids != 3 {
		t.Errorf("usage = %+v", pod.Usage)
	}
	if !pod.HasNanoCores || pod.NanoCores != 5 {
		t.Errorf("nano cores = %d, %v", pod.NanoCores, pod.HasNanoCores)
	}
}

func TestFilesystemOfATempDir(t *testing.T) {
	dir := t.TempDir()
	fs, err := filesystemOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fs.CapacityBytes == 0 || fs.Device == "" {
		t.Errorf("filesystem = %+v, want a capacity and a device", fs)
	}
	if fs.InodesFree > fs.Inodes {
		t.Errorf("%d inodes free of %d", fs.InodesFree, fs.Inodes)
	}
	if _, err := filesystemOf(filepath.Join(dir, "nope")); err == nil {
		t.Error("statfs of a missing path succeeded")
	}
}

// An exited container the kernel OOM-killed counts one kill; its writable
// layer's filesystem is there in detail.
func TestContainerStatsOfAnOOMKilledContainer(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "upper"), 0o755); err != nil {
		t.Fatal(err)
	}
	var s Service
	st, err := s.containerStats(Container{ID: "c1", State: ContainerExited, Reason: ReasonOOMKilled, Dir: dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMKills != 1 || st.HasUsage || st.HasProcesses {
		t.Errorf("oom kills %d, usage %v, processes %v; want 1, none, none", st.OOMKills, st.HasUsage, st.HasProcesses)
	}
	if !st.HasLayerFS || st.LayerFS.CapacityBytes == 0 || st.Time.IsZero() {
		t.Errorf("layer filesystem %+v (%v), time %v", st.LayerFS, st.HasLayerFS, st.Time)
	}
	st, _ = s.containerStats(Container{ID: "c2", State: ContainerExited, Reason: ReasonCompleted, Dir: dir}, false)
	if st.OOMKills != 0 || st.HasLayerFS {
		t.Errorf("completed container: oom kills %d, layer filesystem %v; want 0, none without detail", st.OOMKills, st.HasLayerFS)
	}
}
