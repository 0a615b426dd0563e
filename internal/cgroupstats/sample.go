package cgroupstats

import "time"

// Sample is the usage of one cgroup at one moment.
type Sample struct {
	Time               time.Time
	CPUUsageNanos      uint64 // cumulative CPU time of every task, in ns
	CPUUserNanos       uint64 // the part spent in user mode, ns
	CPUSystemNanos     uint64 // the part spent in the kernel, ns
	MemoryUsage        uint64 // bytes, page cache included
	MemoryWorkingSet   uint64 // usage minus inactive file pages
	MemoryRSS          uint64 // anonymous memory
	PageFaults         uint64 // of the cgroup and its descendants
	MajorPageFaults    uint64
	Pids               uint64 // tasks (threads) in the cgroup now
	PidsLimit          uint64 // pids.max; 0 when there is no limit
	MemoryInactiveFile uint64 // inactive file pages (reclaimable page cache)

	Throttling Throttling
	Memory     MemoryDetail
	Hugetlb    []HugetlbUsage // one per huge page size the cgroup accounts; nil where the controller is off
	IO         []DeviceIO     // one per block device the cgroup did I/O on

	// Pressure stall information (cpu.pressure, memory.pressure,
	// io.pressure) of the cgroup's unified-hierarchy directory: cgroup v2,
	// or a v1 host's /sys/fs/cgroup/unified where runc placed the container
	// too. nil where there is no such file (CONFIG_PSI off, psi=0, a v1
	// host without the unified mount).
	CPUPressure, MemoryPressure, IOPressure *Pressure
}

// Throttling is the CFS bandwidth control's account (cpu.stat).
type Throttling struct {
	Periods          uint64 // enforcement periods that elapsed with runnable tasks
	ThrottledPeriods uint64 // of those, the periods the cgroup was throttled in
	ThrottledNanos   uint64 // total time throttled, ns
}

// MemoryDetail holds the memory figures cAdvisor reports beyond usage and
// working set. On v1 they are the hierarchical (total_*) values of
// memory.stat; on v2 memory.stat is hierarchical already.
type MemoryDetail struct {
	Cache      uint64 // page cache: v1 total_cache, v2 file
	MappedFile uint64 // v1 total_mapped_file, v2 file_mapped
	Swap       uint64 // swap in use: v1 memsw usage minus usage, v2 memory.swap.current
	Kernel     uint64 // v1 memory.kmem.usage_in_bytes, v2 memory.stat kernel (or its parts on older kernels)
	MaxUsage   uint64 // peak usage: v1 max_usage_in_bytes, v2 memory.peak (0 before Linux 5.19)
	Failcnt    uint64 // times usage hit the limit: v1 memory.failcnt, v2 memory.events max
	OOMKills   uint64 // v1 memory.oom_control oom_kill, v2 memory.events oom_kill

	// The cgroup's own page faults, without its descendants': v1 pgfault and
	// pgmajfault; v2 has no such split and repeats the hierarchical values.
	OwnPageFaults, OwnMajorPageFaults uint64
}

// HugetlbUsage is one huge page size's account.
type HugetlbUsage struct {
	PageSize    string // as the kernel names it in the file names: 2MB, 1GB
	Usage       uint64 // bytes
	MaxUsage    uint64 // peak, bytes (v1 only)
	HasMaxUsage bool   // false on v2, which keeps no peak
}

// DeviceIO is the I/O a cgroup did on one block device.
type DeviceIO struct {
	Major, Minor          uint64
	Device                string // /dev/<name> from sysfs, or "major:minor" when unknown
	ReadBytes, WriteBytes uint64
	Reads, Writes         uint64 // operations completed
}

// Pressure is one resource's PSI: how long some, or all, of the cgroup's
// tasks stalled waiting for it.
type Pressure struct {
	Some, Full PressureData
}

// PressureData is one line of a *.pressure file.
type PressureData struct {
	TotalMicros          uint64  // cumulative stall time, µs
	Avg10, Avg60, Avg300 float64 // share of time stalled (%) over 10 s, 60 s, 300 s
}
