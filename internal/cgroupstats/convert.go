package cgroupstats

import (
	"math"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
)

// fromV2 converts what containerd/cgroups read of a v2 cgroup. The
// library reads "max" as MaxUint64; a limit of max is 0 here, as on v1.
func fromV2(st *v2.Metrics) Sample {
	var s Sample
	if cpu := st.GetCPU(); cpu != nil {
		s.CPUUsageNanos = cpu.GetUsageUsec() * 1000
		s.CPUUserNanos = cpu.GetUserUsec() * 1000
		s.CPUSystemNanos = cpu.GetSystemUsec() * 1000
		s.Throttling = Throttling{
			Periods: cpu.GetNrPeriods(), ThrottledPeriods: cpu.GetNrThrottled(), ThrottledNanos: cpu.GetThrottledUsec() * 1000,
		}
	}
	if mem := st.GetMemory(); mem != nil {
		s.MemoryUsage = mem.GetUsage()
		s.MemoryInactiveFile = mem.GetInactiveFile()
		s.MemoryWorkingSet = workingSet(s.MemoryUsage, s.MemoryInactiveFile)
		s.MemoryRSS = mem.GetAnon()
		s.PageFaults = mem.GetPgfault()
		s.MajorPageFaults = mem.GetPgmajfault()
		s.Memory = MemoryDetail{
			Cache: mem.GetFile(), MappedFile: mem.GetFileMapped(), Swap: mem.GetSwapUsage(), MaxUsage: mem.GetMaxUsage(),
			OwnPageFaults: mem.GetPgfault(), OwnMajorPageFaults: mem.GetPgmajfault(),
		} // Kernel: readV2 reads memory.stat's "kernel", which the library skips
	}
	if ev := st.GetMemoryEvents(); ev != nil {
		s.Memory.Failcnt = ev.GetMax()
		s.Memory.OOMKills = ev.GetOomKill()
	}
	s.Pids = st.GetPids().GetCurrent()
	s.PidsLimit = noLimit(st.GetPids().GetLimit())
	for _, e := range st.GetIo().GetUsage() {
		s.IO = append(s.IO, DeviceIO{
			Major: e.GetMajor(), Minor: e.GetMinor(),
			ReadBytes: e.GetRbytes(), WriteBytes: e.GetWbytes(), Reads: e.GetRios(), Writes: e.GetWios(),
		})
	}
	return s
}

// kernelMemoryV2 is memory.stat's "kernel" (Linux 5.18 and later); older
// kernels give its parts, summed.
func kernelMemoryV2(stat map[string]uint64) uint64 {
	if k, ok := stat["kernel"]; ok {
		return k
	}
	var sum uint64
	for _, key := range []string{"kernel_stack", "pagetables", "percpu", "sock", "vmalloc", "slab"} {
		sum += stat[key]
	}
	return sum
}

func noLimit(v uint64) uint64 {
	if v == math.MaxUint64 {
		return 0
	}
	return v
}

// fromV1 converts what containerd/cgroups read of a v1 cgroup, taking the
// hierarchical (total_*) values of memory.stat as cAdvisor does.
func fromV1(st *v1.Metrics) Sample {
	var s Sample
	cpu := st.GetCPU()
	s.CPUUsageNanos = cpu.GetUsage().GetTotal()
	s.CPUUserNanos = cpu.GetUsage().GetUser()
	s.CPUSystemNanos = cpu.GetUsage().GetKernel()
	t := cpu.GetThrottling()
	s.Throttling = Throttling{Periods: t.GetPeriods(), ThrottledPeriods: t.GetThrottledPeriods(), ThrottledNanos: t.GetThrottledTime()}
	if mem := st.GetMemory(); mem != nil {
		s.MemoryUsage = mem.GetUsage().GetUsage()
		s.MemoryInactiveFile = mem.GetTotalInactiveFile()
		s.MemoryWorkingSet = workingSet(s.MemoryUsage, s.MemoryInactiveFile)
		s.MemoryRSS = mem.GetTotalRSS()
		s.PageFaults = mem.GetTotalPgFault()
		s.MajorPageFaults = mem.GetTotalPgMajFault()
		s.Memory = MemoryDetail{
			Cache: mem.GetTotalCache(), MappedFile: mem.GetTotalMappedFile(), Kernel: mem.GetKernel().GetUsage(),
			MaxUsage: mem.GetUsage().GetMax(), Failcnt: mem.GetUsage().GetFailcnt(),
			OwnPageFaults: mem.GetPgFault(), OwnMajorPageFaults: mem.GetPgMajFault(),
		}
		// memsw counts memory and swap together; absent without swap accounting.
		if sw := mem.GetSwap().GetUsage(); sw > s.MemoryUsage {
			s.Memory.Swap = sw - s.MemoryUsage
		}
	}
	s.Memory.OOMKills = st.GetMemoryOomControl().GetOomKill()
	s.Pids = st.GetPids().GetCurrent()
	s.PidsLimit = st.GetPids().GetLimit()
	s.IO = blkioV1(st.GetBlkio())
	return s
}

// blkioV1 folds blkio's per-operation lines (Read, Write, Sync, Async,
// Discard, Total) into one entry per device: bytes from
// io_service_bytes, operations from io_serviced.
func blkioV1(b *v1.BlkIOStat) []DeviceIO {
	var out []DeviceIO
	index := map[[2]uint64]int{}
	entry := func(e *v1.BlkIOEntry) *DeviceIO {
		key := [2]uint64{e.GetMajor(), e.GetMinor()}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, DeviceIO{Major: key[0], Minor: key[1]})
		}
		return &out[i]
	}
	for _, e := range b.GetIoServiceBytesRecursive() {
		switch e.GetOp() {
		case "Read":
			entry(e).ReadBytes = e.GetValue()
		case "Write":
			entry(e).WriteBytes = e.GetValue()
		}
	}
	for _, e := range b.GetIoServicedRecursive() {
		switch e.GetOp() {
		case "Read":
			entry(e).Reads = e.GetValue()
		case "Write":
			entry(e).Writes = e.GetValue()
		}
	}
	return out
}
