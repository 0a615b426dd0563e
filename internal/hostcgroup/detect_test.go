package hostcgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hybridNoHugetlb is a Debian host with v1 controllers (hugetlb and rdma
// not mounted) and an empty cgroup2 hierarchy.
const hybridNoHugetlb = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / MEMORY rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestDetectV1(t *testing.T) {
	for _, swap := range []bool{false, true} {
		memory := t.TempDir()
		if swap {
			touch(t, filepath.Join(memory, "memory.memsw.limit_in_bytes"))
		}
		c, err := detect(strings.NewReader(strings.Replace(hybridNoHugetlb, "MEMORY", memory, 1)), "", "/sys/fs/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"blkio", "cpu", "cpuacct", "cpuset", "memory", "pids"}
		if swap {
			want = []string{"blkio", "cpu", "cpuacct", "cpuset", "memory", Swap, "pids"}
		}
		if got := c.Names(); !slices.Equal(got, want) || c.Unified {
			t.Errorf("swap %v: %v (unified %v), want %v", swap, got, c.Unified, want)
		}
		if c.Has("hugetlb") || c.Has("rdma") || !c.Has("io") {
			t.Errorf("Has: hugetlb %v rdma %v io %v", c.Has("hugetlb"), c.Has("rdma"), c.Has("io"))
		}
	}
}

func TestDetectV2(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	mountinfo := "30 23 0:26 / " + root + " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	c, err := detect(strings.NewReader(mountinfo), "0::/\n", root)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Unified || c.Has("hugetlb") || c.Has(Swap) || !c.Has("blkio") {
		t.Errorf("no swap file: %v unified %v", c.Names(), c.Unified)
	}
	touch(t, filepath.Join(root, "system.slice", "berth.service", "memory.swap.max"))
	c, err = detect(strings.NewReader(mountinfo), "0::/system.slice/berth.service\n", root)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has(Swap) {
		t.Errorf("swap file in the own cgroup not found: %v", c.Names())
	}
}

func TestDetectMalformed(t *testing.T) {
	if _, err := detect(strings.NewReader("1 2 3\n"), "", "/sys/fs/cgroup"); err == nil {
		t.Error("a malformed mountinfo line was accepted")
	}
}

func TestAllHasEverything(t *testing.T) {
	if !All().Has("hugetlb") || !All().Has(Swap) {
		t.Error("All lacks a controller")
	}
}

func TestDetectThisHost(t *testing.T) {
	c, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Names()) == 0 {
		t.Error("no controller found on this host")
	}
	t.Logf("unified %v, controllers %v", c.Unified, c.Names())
}

func touch(t *testing.T, path string) { t.Helper(); writeFile(t, path, "") }

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
