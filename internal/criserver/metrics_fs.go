package criserver

import (
	"strconv"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/pod"
)

// The values of a container's writable layer, of the filesystem holding
// it, and of its block I/O.

// fsUsage is the writable layer's allocation, known for every container
// whose layer exists; device names its filesystem where it was sampled.
func fsUsage(c *pod.ContainerStats) []point {
	if c.WritableLayer.Time.IsZero() {
		return nil
	}
	return []point{{labels: []string{c.LayerFS.Device}, value: c.WritableLayer.Bytes}}
}

// fromLayerFS gives a container's values from the filesystem of its
// writable layer; none when it was not sampled (no layer, or no detail).
func fromLayerFS(f func(*pod.Filesystem) uint64) func(*pod.ContainerStats) []point {
	return func(c *pod.ContainerStats) []point {
		if !c.HasLayerFS {
			return nil
		}
		return []point{{labels: []string{c.LayerFS.Device}, value: f(&c.LayerFS)}}
	}
}

func fsLimit(fs *pod.Filesystem) uint64       { return fs.CapacityBytes }
func fsInodesTotal(fs *pod.Filesystem) uint64 { return fs.Inodes }
func fsInodesFree(fs *pod.Filesystem) uint64  { return fs.InodesFree }

// perDevice gives one value per block device the container did I/O on.
func perDevice(f func(*cgroupstats.DeviceIO) uint64) func(*cgroupstats.Sample) []point {
	return func(u *cgroupstats.Sample) []point {
		out := make([]point, 0, len(u.IO))
		for i := range u.IO {
			out = append(out, point{labels: []string{u.IO[i].Device}, value: f(&u.IO[i])})
		}
		return out
	}
}

var (
	fsReadBytes  = perDevice(func(d *cgroupstats.DeviceIO) uint64 { return d.ReadBytes })
	fsReads      = perDevice(func(d *cgroupstats.DeviceIO) uint64 { return d.Reads })
	fsWriteBytes = perDevice(func(d *cgroupstats.DeviceIO) uint64 { return d.WriteBytes })
	fsWrites     = perDevice(func(d *cgroupstats.DeviceIO) uint64 { return d.Writes })
)

// blkioDeviceUsage is cAdvisor's bytes per device and operation.
func blkioDeviceUsage(u *cgroupstats.Sample) []point {
	out := make([]point, 0, 2*len(u.IO))
	for _, d := range u.IO {
		major, minor := strconv.FormatUint(d.Major, 10), strconv.FormatUint(d.Minor, 10)
		out = append(out,
			point{labels: []string{d.Device, major, minor, "Read"}, value: d.ReadBytes},
			point{labels: []string{d.Device, major, minor, "Write"}, value: d.WriteBytes})
	}
	return out
}
