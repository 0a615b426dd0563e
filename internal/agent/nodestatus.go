package agent

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/eviction"
	"github.com/berth-dev/berth/internal/agent/nodefit"
)

// fitNode is the node pods are admitted against: its name, labels
// (kubelet's well-known ones, --node-labels over them) and taints
// (--register-with-taints only: the conditions' taints, such as
// node.kubernetes.io/memory-pressure, are the node lifecycle
// controller's, which only the scheduler berth plays for its
// controllers' pods sees, schedulerNode; kubelet's own eviction
// admission refuses pods under pressure instead).
func (a *Agent) fitNode() *v1.Node {
	return nodefit.Node(a.cfg.NodeName, a.cfg.NodeLabels, a.cfg.NodeTaints, a.createdAt)
}

// Node is the agent's node as a cluster would show it: labels, taints
// (with its pressure conditions' NoSchedule taints), conditions
// (from the last housekeeping pass), capacity and allocatable (capacity
// less the hard eviction thresholds of memory and nodefs, as kubelet
// computes it without reservations), addresses and nodeInfo; with the
// node's events.
func (a *Agent) Node() agentapi.NodeDetail {
	now := a.deps.clock.Now()
	a.pressure.mu.Lock()
	conditions := a.pressure.conditions
	a.pressure.mu.Unlock()
	if conditions == nil {
		a.updateNodeConditions(now)
		a.pressure.mu.Lock()
		conditions = a.pressure.conditions
		a.pressure.mu.Unlock()
	}
	node := *a.schedulerNode()
	node.Status = v1.NodeStatus{
		Conditions: append([]v1.NodeCondition(nil), conditions...),
		Addresses:  a.nodeAddresses(),
		NodeInfo:   a.nodeInfo(),
	}
	node.Status.Capacity, node.Status.Allocatable = a.nodeResources()
	return agentapi.NodeDetail{Node: node, Events: a.pressure.events.list()}
}

// nodeResources is the node's capacity and allocatable.
func (a *Agent) nodeResources() (v1.ResourceList, v1.ResourceList) {
	alloc := a.deps.node.allocatable
	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(alloc.MilliCPU, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(alloc.MemoryBytes, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(a.cfg.MaxPods), resource.DecimalSI),
	}
	allocatable := capacity.DeepCopy()
	m := a.pressure.manager
	allocatable[v1.ResourceMemory] = *resource.NewQuantity(max(alloc.MemoryBytes-m.HardValue(eviction.SignalMemoryAvailable, alloc.MemoryBytes), 0), resource.BinarySI)
	if fs, err := eviction.Statfs(a.cfg.RootDir); err == nil {
		capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(fs.Capacity, resource.BinarySI)
		allocatable[v1.ResourceEphemeralStorage] = *resource.NewQuantity(max(fs.Capacity-m.HardValue(eviction.SignalNodeFsAvailable, fs.Capacity), 0), resource.BinarySI)
	}
	return capacity, allocatable
}

// nodeAddresses are the host's addresses (InternalIP) and its name.
func (a *Agent) nodeAddresses() []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range a.deps.node.hostIPs {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: a.cfg.NodeName})
}

// nodeInfo is the host's identity, kernel and OS, and the agent's and the
// runtime's versions; what cannot be read stays empty.
func (a *Agent) nodeInfo() v1.NodeSystemInfo {
	info := v1.NodeSystemInfo{
		MachineID:               readTrimmed("/etc/machine-id"),
		BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
		OSImage:                 osImage("/etc/os-release"),
		ContainerRuntimeVersion: a.cfg.RuntimeVersion,
		KubeletVersion:          a.cfg.Version,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		info.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	}
	return info
}

func readTrimmed(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

// osImage is PRETTY_NAME of os-release.
func osImage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
			if unq, err := strconv.Unquote(v); err == nil {
				return unq
			}
			return v
		}
	}
	return ""
}

// admitLocked is kubelet's admission of a new pod: the eviction manager's
// (no pod of a lower QoS under pressure), then the predicates in
// kubelet's order: the room left on the node (--max-pods, allocatable
// CPU, memory, ephemeral storage), then the node's nodeSelector and
// required node affinity, spec.nodeName, taints.
func (a *Agent) admitLocked(pod *v1.Pod, room nodefit.Room) (bool, string, string) {
	if ok, reason, message := a.pressure.manager.Admit(pod); !ok {
		return false, reason, message
	}
	r := room.AdmitResources(pod)
	if r.Admit {
		r = nodefit.Admit(pod, a.fitNode())
	}
	return r.Admit, r.Reason, r.Message
}
