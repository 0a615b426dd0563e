package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// Signal names a resource the manager watches, as kubelet's flags name it.
type Signal string

// The signals, kubelet's names.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

// ResourceInodes and ResourcePIDs are kubelet's names of the resources
// the inode and PID signals stand for (not resources of the core API).
const (
	ResourceInodes v1.ResourceName = "inodes"
	ResourcePIDs   v1.ResourceName = "pids"
)

// signals lists every supported signal in a fixed order.
var signals = []Signal{
	SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable,
}

// known reports whether s is a supported signal.
func known(s Signal) bool {
	for _, k := range signals {
		if k == s {
			return true
		}
	}
	return false
}

// Resource is what a signal measures, as eviction messages name it
// ("The node was low on resource: memory").
func (s Signal) Resource() v1.ResourceName {
	switch s {
	case SignalMemoryAvailable:
		return v1.ResourceMemory
	case SignalNodeFsAvailable, SignalImageFsAvailable:
		return v1.ResourceEphemeralStorage
	case SignalNodeFsInodesFree, SignalImageFsInodesFree:
		return ResourceInodes
	case SignalPIDAvailable:
		return ResourcePIDs
	}
	return ""
}

// Condition is the node condition a signal's threshold raises.
func (s Signal) Condition() v1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable:
		return v1.NodeMemoryPressure
	case SignalPIDAvailable:
		return v1.NodePIDPressure
	}
	return v1.NodeDiskPressure
}

// IsDisk reports whether the signal is about a filesystem: node-level
// reclaim (unused images and containers) may relieve it.
func (s Signal) IsDisk() bool { return s.Condition() == v1.NodeDiskPressure }

// Observation is one signal's measure: what is left and of how much.
type Observation struct {
	Available int64
	Capacity  int64
}

// Observations are the signals measured in one housekeeping pass; a
// signal the observer could not measure is absent (its thresholds are
// then not met).
type Observations map[Signal]Observation
