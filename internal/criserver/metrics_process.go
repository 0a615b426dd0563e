package criserver

import (
	"strconv"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/pod"
)

// The values of a container's processes (procfs, through
// cgroupstats.Processes), of its configuration and of its times.

// fromProcesses gives a container's values from its process list; none
// when it has none (not running, or not sampled in detail).
func fromProcesses(f func(*cgroupstats.Processes) []point) func(*pod.ContainerStats) []point {
	return func(c *pod.ContainerStats) []point {
		if !c.HasProcesses {
			return nil
		}
		return f(&c.Processes)
	}
}

func processCount(p *cgroupstats.Processes) []point    { return one(p.Count) }
func fileDescriptors(p *cgroupstats.Processes) []point { return one(p.FDs) }
func sockets(p *cgroupstats.Processes) []point         { return one(p.Sockets) }

func ulimitsSoft(p *cgroupstats.Processes) []point {
	if !p.HasMaxOpenFiles {
		return nil
	}
	return []point{{labels: []string{"max_open_files"}, value: p.MaxOpenFiles}}
}

// Threads are the cgroup's tasks, and their limit its pids.max.
func threads(u *cgroupstats.Sample) []point    { return one(u.Pids) }
func threadsMax(u *cgroupstats.Sample) []point { return one(u.PidsLimit) }

// The spec_* values are the resources the container was created or last
// updated with (kubelet's, through UpdateContainerResources), 0 where none
// was set; a negative value (unlimited) is 0 as well, as cAdvisor reports it.
func specCPUPeriod(c *pod.ContainerStats) []point {
	return one(nonNegative(c.Container.Config.GetLinux().GetResources().GetCpuPeriod()))
}

func specCPUQuota(c *pod.ContainerStats) []point {
	q := c.Container.Config.GetLinux().GetResources().GetCpuQuota()
	if q <= 0 {
		return nil
	}
	return one(uint64(q))
}

func specCPUShares(c *pod.ContainerStats) []point {
	return one(nonNegative(c.Container.Config.GetLinux().GetResources().GetCpuShares()))
}

func specMemoryLimit(c *pod.ContainerStats) []point {
	return one(nonNegative(c.Container.Config.GetLinux().GetResources().GetMemoryLimitInBytes()))
}

func specMemorySwapLimit(c *pod.ContainerStats) []point {
	return one(nonNegative(c.Container.Config.GetLinux().GetResources().GetMemorySwapLimitInBytes()))
}

// specMemoryReservation is the unified memory.min kubelet's MemoryQoS sets,
// as CRI-O reports it; "max" or anything unparsable is 0.
func specMemoryReservation(c *pod.ContainerStats) []point {
	v, err := strconv.ParseInt(c.Container.Config.GetLinux().GetResources().GetUnified()["memory.min"], 10, 64)
	if err != nil {
		v = 0
	}
	return one(nonNegative(v))
}

func nonNegative(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

func startTime(c *pod.ContainerStats) []point { return one(nonNegative(c.Container.CreatedAt.Unix())) }
func lastSeen(c *pod.ContainerStats) []point  { return one(nonNegative(c.Time.Unix())) }
