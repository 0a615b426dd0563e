package criserver

import (
	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/pod"
)

// The values read from a running container's cgroup (cgroupstats.Sample).

// fromUsage gives a container's values from its cgroup sample; none when
// it has no cgroup (not running).
func fromUsage(f func(*cgroupstats.Sample) []point) func(*pod.ContainerStats) []point {
	return func(c *pod.ContainerStats) []point {
		if !c.HasUsage {
			return nil
		}
		return f(&c.Usage)
	}
}

// one is a metric's single value, without labels of its own.
func one(v uint64) []point { return []point{{value: v}} }

// seconds truncates nanoseconds to whole seconds; micros, microseconds.
func seconds(nanos uint64) uint64 { return nanos / 1e9 }
func micros(us uint64) uint64     { return us / 1e6 }

func cpuUsage(u *cgroupstats.Sample) []point {
	return []point{{labels: []string{"total"}, value: seconds(u.CPUUsageNanos)}}
}
func cpuUser(u *cgroupstats.Sample) []point             { return one(seconds(u.CPUUserNanos)) }
func cpuSystem(u *cgroupstats.Sample) []point           { return one(seconds(u.CPUSystemNanos)) }
func cfsPeriods(u *cgroupstats.Sample) []point          { return one(u.Throttling.Periods) }
func cfsThrottledPeriods(u *cgroupstats.Sample) []point { return one(u.Throttling.ThrottledPeriods) }
func cfsThrottledSeconds(u *cgroupstats.Sample) []point {
	return one(seconds(u.Throttling.ThrottledNanos))
}

func memoryUsage(u *cgroupstats.Sample) []point      { return one(u.MemoryUsage) }
func memoryWorkingSet(u *cgroupstats.Sample) []point { return one(u.MemoryWorkingSet) }
func memoryRSS(u *cgroupstats.Sample) []point        { return one(u.MemoryRSS) }
func memoryCache(u *cgroupstats.Sample) []point      { return one(u.Memory.Cache) }
func memoryMappedFile(u *cgroupstats.Sample) []point { return one(u.Memory.MappedFile) }
func memorySwap(u *cgroupstats.Sample) []point       { return one(u.Memory.Swap) }
func memoryKernel(u *cgroupstats.Sample) []point     { return one(u.Memory.Kernel) }
func memoryMaxUsage(u *cgroupstats.Sample) []point   { return one(u.Memory.MaxUsage) }
func memoryFailcnt(u *cgroupstats.Sample) []point    { return one(u.Memory.Failcnt) }

// memoryFailures are cAdvisor's four: page faults and major page faults,
// of the cgroup alone and of its hierarchy.
func memoryFailures(u *cgroupstats.Sample) []point {
	return []point{
		{labels: []string{"pgfault", "container"}, value: u.Memory.OwnPageFaults},
		{labels: []string{"pgfault", "hierarchy"}, value: u.PageFaults},
		{labels: []string{"pgmajfault", "container"}, value: u.Memory.OwnMajorPageFaults},
		{labels: []string{"pgmajfault", "hierarchy"}, value: u.MajorPageFaults},
	}
}

// oomEvents is recorded for every container, running or not.
func oomEvents(c *pod.ContainerStats) []point { return one(c.OOMKills) }

func hugetlbUsage(u *cgroupstats.Sample) []point {
	out := make([]point, 0, len(u.Hugetlb))
	for _, h := range u.Hugetlb {
		out = append(out, point{labels: []string{h.PageSize}, value: h.Usage})
	}
	return out
}

func hugetlbMaxUsage(u *cgroupstats.Sample) []point {
	var out []point
	for _, h := range u.Hugetlb {
		if h.HasMaxUsage {
			out = append(out, point{labels: []string{h.PageSize}, value: h.MaxUsage})
		}
	}
	return out
}

// PSI: "some" is time some tasks waited, "full" time all of them stalled.
func cpuWaiting(u *cgroupstats.Sample) []point    { return psi(u.CPUPressure, false) }
func cpuStalled(u *cgroupstats.Sample) []point    { return psi(u.CPUPressure, true) }
func memoryWaiting(u *cgroupstats.Sample) []point { return psi(u.MemoryPressure, false) }
func memoryStalled(u *cgroupstats.Sample) []point { return psi(u.MemoryPressure, true) }
func ioWaiting(u *cgroupstats.Sample) []point     { return psi(u.IOPressure, false) }
func ioStalled(u *cgroupstats.Sample) []point     { return psi(u.IOPressure, true) }

// psi is a pressure's total stall time in whole seconds; none where the
// kernel offers no PSI for the cgroup.
func psi(p *cgroupstats.Pressure, full bool) []point {
	switch {
	case p == nil:
		return nil
	case full:
		return one(micros(p.Full.TotalMicros))
	default:
		return one(micros(p.Some.TotalMicros))
	}
}
