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
