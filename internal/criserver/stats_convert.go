package criserver

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/pod"
)

func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

// containerStatsCRI converts a container's sample; CPU and memory are left
// out when the container has no cgroup (not running).
func containerStatsCRI(st *pod.ContainerStats) *runtimeapi.ContainerStats {
	c := &st.Container
	out := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id: c.ID, Metadata: c.Config.GetMetadata(), Labels: c.Config.GetLabels(), Annotations: c.Config.GetAnnotations(),
		},
	}
	if !st.WritableLayer.Time.IsZero() {
		out.WritableLayer = &runtimeapi.FilesystemUsage{
			Timestamp:  st.WritableLayer.Time.UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: st.WritableLayer.Path},
			UsedBytes:  u64(st.WritableLayer.Bytes),
			InodesUsed: u64(st.WritableLayer.Inodes),
		}
	}
	if st.HasUsage {
		out.Cpu = cpuCRI(&st.Usage, st.NanoCores, st.HasNanoCores)
		out.Memory = memoryCRI(&st.Usage)
		if p := st.Usage.IOPressure; p != nil {
			out.Io = &runtimeapi.IoUsage{Timestamp: st.Usage.Time.UnixNano(), Psi: psiCRI(p)}
		}
	}
	return out
}

// psiCRI converts a pressure; the CRI counts its total in ns, the kernel in µs.
func psiCRI(p *cgroupstats.Pressure) *runtimeapi.PsiStats {
	if p == nil {
		return nil
	}
	data := func(d cgroupstats.PressureData) *runtimeapi.PsiData {
		return &runtimeapi.PsiData{Total: d.TotalMicros * 1000, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &runtimeapi.PsiStats{Some: data(p.Some), Full: data(p.Full)}
}

func cpuCRI(u *cgroupstats.Sample, nanoCores uint64, hasRate bool) *runtimeapi.CpuUsage {
	cpu := &runtimeapi.CpuUsage{Timestamp: u.Time.UnixNano(), UsageCoreNanoSeconds: u64(u.CPUUsageNanos), Psi: psiCRI(u.CPUPressure)}
	if hasRate {
		cpu.UsageNanoCores = u64(nanoCores)
	}
	return cpu
}

func memoryCRI(u *cgroupstats.Sample) *runtimeapi.MemoryUsage {
	return &runtimeapi.MemoryUsage{
		Timestamp:       u.Time.UnixNano(),
		WorkingSetBytes: u64(u.MemoryWorkingSet),
		UsageBytes:      u64(u.MemoryUsage),
		RssBytes:        u64(u.MemoryRSS),
		PageFaults:      u64(u.PageFaults),
		MajorPageFaults: u64(u.MajorPageFaults),
		Psi:             psiCRI(u.MemoryPressure),
	}
}

// sandboxStatsCRI converts a pod's sample: the sum of its containers, its
// process count and its interfaces (eth0 is the default one).
func sandboxStatsCRI(st *pod.SandboxStats) *runtimeapi.PodSandboxStats {
	sb := &st.Sandbox
	ts := st.Usage.Time.UnixNano()
	linux := &runtimeapi.LinuxPodSandboxStats{
		Cpu:     cpuCRI(&st.Usage, st.NanoCores, st.HasNanoCores),
		Memory:  memoryCRI(&st.Usage),
		Process: &runtimeapi.ProcessUsage{Timestamp: ts, ProcessCount: u64(st.Usage.Pids)},
	}
	linux.Network = networkCRI(ts, st.Interfaces)
	for i := range st.Containers {
		linux.Containers = append(linux.Containers, containerStatsCRI(&st.Containers[i]))
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.ID, Metadata: sb.Config.GetMetadata(), Labels: sb.Config.GetLabels(), Annotations: sb.Config.GetAnnotations(),
		},
		Linux: linux,
	}
}

// defaultInterface is the pod interface CNI plugins create, as kubelet names it.
const defaultInterface = "eth0"

// networkCRI is a pod's network usage, nil unless the pod has its default
// interface: kubelet (1.37 with PodAndContainerStatsFromCRI) reads the
// default interface of every usage it gets without a nil check, and a pod
// between CNI DEL and the end of its namespace, or one whose CNI plugin
// named the interface otherwise, has none. containerd reports the same:
// eth0, or nothing.
func networkCRI(ts int64, ifaces []pod.InterfaceCounters) *runtimeapi.NetworkUsage {
	n := &runtimeapi.NetworkUsage{Timestamp: ts}
	for _, c := range ifaces {
		if c.Name == "lo" {
			continue
		}
		u := &runtimeapi.NetworkInterfaceUsage{
			Name: c.Name, RxBytes: u64(c.RxBytes), RxErrors: u64(c.RxErrors), TxBytes: u64(c.TxBytes), TxErrors: u64(c.TxErrors),
		}
		if c.Name == defaultInterface {
			n.DefaultInterface = u
		} else {
			n.Interfaces = append(n.Interfaces, u)
		}
	}
	if n.DefaultInterface == nil {
		return nil
	}
	return n
}
