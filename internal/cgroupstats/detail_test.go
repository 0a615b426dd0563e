package cgroupstats

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sysWithDisk is a sysfs holding one block device, 8:0 named sda.
func sysWithDisk(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	writeFiles(t, filepath.Join(sys, "dev/block/8:0"), map[string]string{"uevent": "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\n"})
	return sys
}

// A v2 cgroup with every file cAdvisor's metrics come from.
func TestReadV2Detail(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "pod/c1"), map[string]string{
		"cpu.stat": "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n" +
			"nr_periods 40\nnr_throttled 7\nthrottled_usec 1500000\n",
		"memory.current": "10000\n",
		"memory.peak":    "25000\n",
		"memory.stat": "anon 4000\nfile 5000\nkernel 900\nkernel_stack 100\nslab 300\nsock 0\nfile_mapped 1200\n" +
			"inactive_file 1000\npgfault 50\npgmajfault 2\n",
		"memory.swap.current": "64\n",
		"memory.events":       "low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\n",
		"pids.current":        "6\n",
		"pids.max":            "128\n",
		"io.stat":             "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n7:3 rbytes=10 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n",
		"cpu.pressure":        "some avg10=0.00 avg60=0.00 avg300=0.00 total=5000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n",
		"memory.pressure":     "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"io.pressure":         "some avg10=0.00 avg60=0.00 avg300=0.00 total=3000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=2000000\n",
		// hugetlb: .current per size; .max is the limit, not a peak; rsvd is another account.
		"hugetlb.2MB.current":      "4194304\n",
		"hugetlb.2MB.max":          "max\n",
		"hugetlb.2MB.rsvd.current": "0\n",
		"hugetlb.1GB.current":      "0\n",
	})
	s, err := Reader{Root: root, Unified: true, Sys: sysWithDisk(t)}.Read("/pod/c1")
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUserNanos != 2e9 || s.CPUSystemNanos != 1e9 {
		t.Errorf("user/system = %d/%d ns, want 2e9/1e9", s.CPUUserNanos, s.CPUSystemNanos)
	}
	if want := (Throttling{Periods: 40, ThrottledPeriods: 7, ThrottledNanos: 1.5e9}); s.Throttling != want {
		t.Errorf("throttling = %+v, want %+v", s.Throttling, want)
	}
	wantMem := MemoryDetail{Cache: 5000, MappedFile: 1200, Swap: 64, Kernel: 900, MaxUsage: 25000, Failcnt: 9, OOMKills: 1,
		OwnPageFaults: 50, OwnMajorPageFaults: 2}
	if s.Memory != wantMem {
		t.Errorf("memory = %+v\nwant     %+v", s.Memory, wantMem)
	}
	if s.Pids != 6 || s.PidsLimit != 128 {
		t.Errorf("pids = %d of %d, want 6 of 128", s.Pids, s.PidsLimit)
	}
	wantIO := []DeviceIO{
		{Major: 8, Minor: 0, Device: "/dev/sda", ReadBytes: 4096, WriteBytes: 8192, Reads: 1, Writes: 2},
		{Major: 7, Minor: 3, Device: "7:3", ReadBytes: 10, Reads: 1},
	}
	if !reflect.DeepEqual(s.IO, wantIO) {
		t.Errorf("io = %+v\nwant %+v", s.IO, wantIO)
	}
	wantHuge := []HugetlbUsage{{PageSize: "1GB"}, {PageSize: "2MB", Usage: 4194304}}
	if !reflect.DeepEqual(s.Hugetlb, wantHuge) {
		t.Errorf("hugetlb = %+v, want %+v (v2 keeps no peak)", s.Hugetlb, wantHuge)
	}
	if s.CPUPressure == nil || s.CPUPressure.Some.TotalMicros != 5e6 || s.CPUPressure.Full.TotalMicros != 1e6 ||
		s.IOPressure == nil || s.IOPressure.Full.TotalMicros != 2e6 || s.MemoryPressure == nil {
		t.Errorf("pressure cpu %+v io %+v memory %+v", s.CPUPressure, s.IOPressure, s.MemoryPressure)
	}
}

// Without memory.stat's "kernel" line (before Linux 5.18) its parts are summed.
func TestKernelMemoryV2FromParts(t *testing.T) {
	if got := kernelMemoryV2(map[string]uint64{"kernel_stack": 1, "pagetables": 2, "percpu": 4, "sock": 8, "vmalloc": 16, "slab": 32, "anon": 64}); got != 63 {
		t.Errorf("kernel = %d, want 63", got)
	}
	if got := kernelMemoryV2(map[string]uint64{"kernel": 5, "slab": 32}); got != 5 {
		t.Errorf("kernel = %d, want 5 (the kernel's own sum)", got)
	}
}

// writeV1Tree writes a v1 cgroup /pod/c1 under every controller a v1 host mounts.
func writeV1Tree(t *testing.T, root string) {
	t.Helper()
	c := func(controller string, files map[string]string) {
		writeFiles(t, filepath.Join(root, controller, "pod/c1"), files)
	}
	c("cpu", map[string]string{"cpu.stat": "nr_periods 40\nnr_throttled 7\nthrottled_time 1500000000\n"})
	c("cpuacct", map[string]string{
		"cpuacct.usage":        "3000000000\n",
		"cpuacct.usage_percpu": "1000000000 2000000000\n",
		"cpuacct.stat":         "user 200\nsystem 100\n", // USER_HZ ticks: 100 per second
	})
	c("memory", map[string]string{
		"memory.stat": "cache 10\nrss 20\nmapped_file 30\npgfault 40\npgmajfault 1\n" +
			"total_cache 5000\ntotal_rss 4000\ntotal_mapped_file 1200\ntotal_inactive_file 1000\ntotal_pgfault 50\ntotal_pgmajfault 2\n",
		"memory.oom_control":              "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
		"memory.usage_in_bytes":           "10000\n",
		"memory.max_usage_in_bytes":       "25000\n",
		"memory.failcnt":                  "9\n",
		"memory.limit_in_bytes":           "67108864\n",
		"memory.memsw.usage_in_bytes":     "10064\n",
		"memory.memsw.max_usage_in_bytes": "25064\n",
		"memory.memsw.failcnt":            "0\n",
		"memory.memsw.limit_in_bytes":     "67108864\n",
		"memory.kmem.usage_in_bytes":      "900\n",
		"memory.kmem.max_usage_in_bytes":  "1000\n",
		"memory.kmem.failcnt":             "0\n",
		"memory.kmem.limit_in_bytes":      "9223372036854771712\n",
		"cgroup.procs":                    "",
	})
	// Swap accounting on: the root memory cgroup has memsw files too.
	writeFiles(t, filepath.Join(root, "memory"), map[string]string{"memory.memsw.usage_in_bytes": "0\n"})
	c("pids", map[string]string{"pids.current": "6\n", "pids.max": "max\n"})
	c("blkio", map[string]string{
		"blkio.throttle.io_service_bytes": "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 12288\n8:0 Discard 0\n8:0 Total 12288\nTotal 12288\n",
		"blkio.throttle.io_serviced":      "8:0 Read 1\n8:0 Write 2\n8:0 Sync 0\n8:0 Async 3\n8:0 Discard 0\n8:0 Total 3\nTotal 3\n",
	})
	c("hugetlb", map[string]string{
		"hugetlb.2MB.usage_in_bytes":     "2097152\n",
		"hugetlb.2MB.max_usage_in_bytes": "6291456\n",
	})
	c("unified", map[string]string{
		"cpu.pressure": "some avg10=1.00 avg60=0.00 avg300=0.00 total=5000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n",
	})
}

// A v1 cgroup with every file cAdvisor's metrics come from, on a hybrid
// host (PSI from the unified hierarchy).
func TestReadV1Detail(t *testing.T) {
	root := t.TempDir()
	writeV1Tree(t, root)
	proc := t.TempDir()
	writeFiles(t, proc, map[string]string{"partitions": "major minor  #blocks  name\n\n   8        0   1048576 sda\n"})
	s, err := Reader{Root: root, Proc: proc, Sys: sysWithDisk(t)}.Read("/pod/c1")
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUsageNanos != 3e9 || s.CPUUserNanos != 2e9 || s.CPUSystemNanos != 1e9 {
		t.Errorf("cpu = %d (user %d, system %d) ns, want 3e9 (2e9, 1e9)", s.CPUUsageNanos, s.CPUUserNanos, s.CPUSystemNanos)
	}
	if want := (Throttling{Periods: 40, ThrottledPeriods: 7, ThrottledNanos: 1.5e9}); s.Throttling != want {
		t.Errorf("throttling = %+v, want %+v", s.Throttling, want)
	}
	wantMem := MemoryDetail{Cache: 5000, MappedFile: 1200, Swap: 64, Kernel: 900, MaxUsage: 25000, Failcnt: 9, OOMKills: 3,
		OwnPageFaults: 40, OwnMajorPageFaults: 1}
	if s.Memory != wantMem {
		t.Errorf("memory = %+v\nwant     %+v", s.Memory, wantMem)
	}
	if s.MemoryUsage != 10000 || s.MemoryWorkingSet != 9000 || s.MemoryRSS != 4000 || s.PageFaults != 50 || s.MajorPageFaults != 2 {
		t.Errorf("usage %d, working set %d, rss %d, faults %d/%d", s.MemoryUsage, s.MemoryWorkingSet, s.MemoryRSS, s.PageFaults, s.MajorPageFaults)
	}
	if s.Pids != 6 || s.PidsLimit != 0 {
		t.Errorf("pids = %d of %d, want 6 of 0 (max)", s.Pids, s.PidsLimit)
	}
	wantIO := []DeviceIO{{Major: 8, Minor: 0, Device: "/dev/sda", ReadBytes: 4096, WriteBytes: 8192, Reads: 1, Writes: 2}}
	if !reflect.DeepEqual(s.IO, wantIO) {
		t.Errorf("io = %+v\nwant %+v", s.IO, wantIO)
	}
	wantHuge := []HugetlbUsage{{PageSize: "2MB", Usage: 2097152, MaxUsage: 6291456, HasMaxUsage: true}}
	if !reflect.DeepEqual(s.Hugetlb, wantHuge) {
		t.Errorf("hugetlb = %+v, want %+v", s.Hugetlb, wantHuge)
	}
	if s.CPUPressure == nil || s.CPUPressure.Some.TotalMicros != 5e6 || s.CPUPressure.Some.Avg10 != 1 || s.IOPressure != nil {
		t.Errorf("pressure cpu %+v io %+v, want cpu from unified/, no io", s.CPUPressure, s.IOPressure)
	}
}

// A v1 host without the hugetlb controller, the unified mount or swap
// accounting still gives the rest.
func TestReadV1WithoutOptionalControllers(t *testing.T) {
	root := t.TempDir()
	writeV1Tree(t, root)
	for _, gone := range []string{"hugetlb", "unified", "blkio"} {
		if err := os.RemoveAll(filepath.Join(root, gone)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"pod/c1/memory.memsw.usage_in_bytes", "pod/c1/memory.memsw.max_usage_in_bytes",
		"pod/c1/memory.memsw.failcnt", "pod/c1/memory.memsw.limit_in_bytes", "memory.memsw.usage_in_bytes"} {
		if err := os.Remove(filepath.Join(root, "memory", f)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Reader{Root: root}.Read("/pod/c1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Hugetlb != nil || s.IO != nil || s.CPUPressure != nil || s.Memory.Swap != 0 {
		t.Errorf("hugetlb %v, io %v, psi %v, swap %d: want none", s.Hugetlb, s.IO, s.CPUPressure, s.Memory.Swap)
	}
	if s.Memory.Kernel != 900 || s.Throttling.Periods != 40 || s.MemoryUsage != 10000 {
		t.Errorf("kernel %d, periods %d, usage %d: want 900, 40, 10000", s.Memory.Kernel, s.Throttling.Periods, s.MemoryUsage)
	}
}

func TestDeviceName(t *testing.T) {
	sys := sysWithDisk(t)
	if got := deviceName(sys, 8, 0); got != "/dev/sda" {
		t.Errorf("8:0 = %q, want /dev/sda", got)
	}
	if got := deviceName(sys, 0, 45); got != "0:45" {
		t.Errorf("0:45 = %q, want 0:45", got)
	}
}
