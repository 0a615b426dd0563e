package cgroupstats

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadV2FakeTree(t *testing.T) {
	for _, tc := range []struct{ cgroupsPath, dir string }{
		{"/kubepods/pod1/c1", "kubepods/pod1/c1"},
		{"kubepods-pod1.slice:berth:c1", "kubepods.slice/kubepods-pod1.slice/berth-c1.scope"},
	} {
		readV2FakeTree(t, tc.cgroupsPath, tc.dir)
	}
}

func readV2FakeTree(t *testing.T, cgroupsPath, dir string) {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, dir), map[string]string{
		"cpu.stat":       "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n",
		"memory.current": "10485760\n",
		"memory.stat":    "anon 4194304\nfile 6291456\ninactive_file 2097152\nactive_file 4194304\npgfault 77\npgmajfault 3\n",
		"pids.current":   "4\n",
		"pids.max":       "max\n",
	})
	s, err := Reader{Root: root, Unified: true}.Read(cgroupsPath)
	if err != nil {
		t.Fatalf("%s: %v", cgroupsPath, err)
	}
	want := Sample{
		Time: s.Time, CPUUsageNanos: 2_500_000, CPUUserNanos: 2_000_000, CPUSystemNanos: 500_000,
		MemoryUsage: 10485760, MemoryWorkingSet: 10485760 - 2097152,
		MemoryRSS: 4194304, PageFaults: 77, MajorPageFaults: 3, Pids: 4, MemoryInactiveFile: 2097152,
		Memory: MemoryDetail{Cache: 6291456, OwnPageFaults: 77, OwnMajorPageFaults: 3},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("%s: sample = %+v\nwant     %+v", cgroupsPath, s, want)
	}
	if s.Time.IsZero() {
		t.Error("sample has no time")
	}
}

func TestReadV2MissingCgroupIsNotFound(t *testing.T) {
	_, err := Reader{Root: t.TempDir(), Unified: true}.Read("/gone")
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestReadInvalidSystemdPath(t *testing.T) {
	_, err := Reader{Root: t.TempDir(), Unified: true}.Read("a/b.slice:berth:c1")
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
}

func TestReadV1MissingCgroupIsNotFound(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"cpuacct", "memory", "pids"} {
		writeFiles(t, filepath.Join(root, c), nil)
	}
	_, err := Reader{Root: root}.Read("/gone-" + strconv.Itoa(rand.IntN(1e9)))
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestWorkingSetNeverNegative(t *testing.T) {
	cases := []struct{ usage, inactive, want uint64 }{{100, 30, 70}, {100, 100, 0}, {10, 30, 0}, {0, 0, 0}}
	for _, c := range cases {
		if got := workingSet(c.usage, c.inactive); got != c.want {
			t.Errorf("workingSet(%d, %d) = %d, want %d", c.usage, c.inactive, got, c.want)
		}
	}
}

// TestReadV1Host reads a real cgroup v1 holding one sleeping process.
func TestReadV1Host(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if Host().Unified {
		t.Skip("host runs cgroup v2 only")
	}
	rel := fmt.Sprintf("/berth-cgroupstats-test-%d", rand.IntN(1e9))
	cmd := exec.Command("/bin/busybox", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, c := range []string{"cpuacct", "memory", "pids"} {
		dir := filepath.Join("/sys/fs/cgroup", c, rel)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = os.WriteFile(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
			for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
				time.Sleep(20 * time.Millisecond)
			}
		})
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Host().Read(rel)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pids != 1 {
		t.Errorf("pids = %d, want 1", s.Pids)
	}
	if s.MemoryWorkingSet > s.MemoryUsage {
		t.Errorf("working set %d > usage %d", s.MemoryWorkingSet, s.MemoryUsage)
	}
}

// PSI comes from the cgroup's *.pressure files; a file the kernel does not
// offer leaves that resource's pressure nil.
func TestReadV2Pressure(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "berth/c1"), map[string]string{
		"cpu.stat":        "usage_usec 1\n",
		"memory.current":  "1\n",
		"memory.stat":     "anon 1\n",
		"cpu.pressure":    "some avg10=1.50 avg60=0.25 avg300=0.05 total=12345\nfull avg10=0.50 avg60=0.10 avg300=0.00 total=678\n",
		"memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=4\n",
	})
	s, err := Reader{Root: root, Unified: true}.Read("/berth/c1")
	if err != nil {
		t.Fatal(err)
	}
	wantCPU := Pressure{
		Some: PressureData{TotalMicros: 12345, Avg10: 1.5, Avg60: 0.25, Avg300: 0.05},
		Full: PressureData{TotalMicros: 678, Avg10: 0.5, Avg60: 0.1},
	}
	if s.CPUPressure == nil || *s.CPUPressure != wantCPU {
		t.Errorf("cpu pressure %+v, want %+v", s.CPUPressure, wantCPU)
	}
	if s.MemoryPressure == nil || s.MemoryPressure.Some.TotalMicros != 9 || s.MemoryPressure.Full.TotalMicros != 4 {
		t.Errorf("memory pressure %+v, want totals 9 and 4", s.MemoryPressure)
	}
	if s.IOPressure != nil {
		t.Errorf("io pressure %+v without io.pressure, want nil", s.IOPressure)
	}
}
