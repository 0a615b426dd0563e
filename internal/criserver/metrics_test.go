package criserver

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/pod"
)

// SandboxMetrics is SandboxStats with every detail a host can give: huge
// pages, PSI, block I/O, processes, the layer's filesystem, and a
// configuration with resources.
func (f fakeStats) SandboxMetrics(id string) (pod.SandboxStats, error) {
	st, err := f.SandboxStats(id)
	if err != nil {
		return st, err
	}
	for i := range st.Containers {
		c := &st.Containers[i]
		c.Time = time.Unix(1000, 0)
		c.Container.CreatedAt = time.Unix(900, 500)
		c.Container.Name = "reserved_" + c.Container.ID
		c.Container.ImageName = "busybox:latest"
		c.Container.Config.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{
			CpuPeriod: 100000, CpuQuota: 20000, CpuShares: 1024, MemoryLimitInBytes: 64 << 20, MemorySwapLimitInBytes: -1,
			Unified: map[string]string{"memory.min": "1048576"},
		}}
		c.LayerFS, c.HasLayerFS = pod.Filesystem{Device: "/dev/vda1", CapacityBytes: 1 << 30, Inodes: 100, InodesFree: 40}, true
		if !c.HasUsage {
			continue
		}
		c.OOMKills = 2
		c.Processes, c.HasProcesses = cgroupstats.Processes{Count: 2, FDs: 9, Sockets: 1, MaxOpenFiles: 1024, HasMaxOpenFiles: true}, true
		u := &c.Usage
		u.CPUUsageNanos, u.CPUUserNanos, u.CPUSystemNanos = 7_999_999_999, 5e9, 2e9
		u.Throttling = cgroupstats.Throttling{Periods: 40, ThrottledPeriods: 7, ThrottledNanos: 1_500_000_000}
		u.PageFaults, u.MajorPageFaults, u.PidsLimit = 50, 2, 128
		u.Memory = cgroupstats.MemoryDetail{Cache: 11, MappedFile: 12, Swap: 13, Kernel: 14, MaxUsage: 15, Failcnt: 16,
			OwnPageFaults: 40, OwnMajorPageFaults: 1}
		u.Hugetlb = []cgroupstats.HugetlbUsage{{PageSize: "2MB", Usage: 2 << 20, MaxUsage: 4 << 20, HasMaxUsage: true}}
		u.IO = []cgroupstats.DeviceIO{{Major: 8, Minor: 0, Device: "/dev/sda", ReadBytes: 4096, WriteBytes: 8192, Reads: 1, Writes: 2}}
		p := &cgroupstats.Pressure{Some: cgroupstats.PressureData{TotalMicros: 3_900_000}, Full: cgroupstats.PressureData{TotalMicros: 1_000_001}}
		u.CPUPressure, u.MemoryPressure, u.IOPressure = p, p, p
	}
	for i := range st.Interfaces {
		if c := &st.Interfaces[i]; c.Name == "eth0" {
			c.RxPackets, c.RxDropped, c.TxPackets, c.TxDropped = 3, 1, 2, 5
		}
	}
	return st, nil
}

// The metric set of critest v1.37 (pkg/validate/pod.go), which is what
// kubelet's /metrics/cadvisor gives with CRI-O.
var cadvisorMetricNames = []string{
	"container_blkio_device_usage_total", "container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total",
	"container_cpu_cfs_throttled_seconds_total", "container_cpu_system_seconds_total", "container_cpu_usage_seconds_total",
	"container_cpu_user_seconds_total", "container_file_descriptors", "container_fs_inodes_free", "container_fs_inodes_total",
	"container_fs_limit_bytes", "container_fs_reads_bytes_total", "container_fs_reads_total", "container_fs_usage_bytes",
	"container_fs_writes_bytes_total", "container_fs_writes_total", "container_hugetlb_max_usage_bytes",
	"container_hugetlb_usage_bytes", "container_last_seen", "container_memory_cache", "container_memory_failcnt",
	"container_memory_failures_total", "container_memory_kernel_usage", "container_memory_mapped_file",
	"container_memory_max_usage_bytes", "container_memory_rss", "container_memory_swap", "container_memory_usage_bytes",
	"container_memory_working_set_bytes", "container_network_receive_bytes_total", "container_network_receive_errors_total",
	"container_network_receive_packets_dropped_total", "container_network_receive_packets_total",
	"container_network_transmit_bytes_total", "container_network_transmit_errors_total",
	"container_network_transmit_packets_dropped_total", "container_network_transmit_packets_total",
	"container_oom_events_total", "container_pressure_cpu_stalled_seconds_total", "container_pressure_cpu_waiting_seconds_total",
	"container_pressure_io_stalled_seconds_total", "container_pressure_io_waiting_seconds_total",
	"container_pressure_memory_stalled_seconds_total", "container_pressure_memory_waiting_seconds_total",
	"container_processes", "container_sockets", "container_spec_cpu_period", "container_spec_cpu_quota",
	"container_spec_cpu_shares", "container_spec_memory_limit_bytes", "container_spec_memory_reservation_limit_bytes",
	"container_spec_memory_swap_limit_bytes", "container_start_time_seconds", "container_threads", "container_threads_max",
	"container_ulimits_soft",
}

func TestMetricDescriptorsAreCAdvisorsSet(t *testing.T) {
	resp, err := newStatsServer().ListMetricDescriptors(context.Background(), &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*runtimeapi.MetricDescriptor{}
	for _, d := range resp.GetDescriptors() {
		if got[d.GetName()] != nil {
			t.Errorf("%s described twice", d.GetName())
		}
		got[d.GetName()] = d
		if d.GetHelp() == "" || len(d.GetLabelKeys()) < len(commonLabelKeys) {
			t.Errorf("%s: help %q, label keys %v", d.GetName(), d.GetHelp(), d.GetLabelKeys())
		}
		if strings.Contains(d.GetName(), "seconds") && !strings.Contains(d.GetHelp(), "seconds") {
			t.Errorf("%s: help %q does not give the unit", d.GetName(), d.GetHelp())
		}
	}
	for _, name := range cadvisorMetricNames {
		if got[name] == nil {
			t.Errorf("%s not described", name)
		}
	}
	if len(got) != len(cadvisorMetricNames) {
		t.Errorf("%d descriptors, want cAdvisor's %d", len(got), len(cadvisorMetricNames))
	}
}

// listMetrics returns sbA's metrics by name: pod-level and containers' alike.
func listMetrics(t *testing.T) (pod, c1, c2 map[string][]*runtimeapi.Metric) {
	t.Helper()
	resp, err := newStatsServer().ListPodSandboxMetrics(context.Background(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := func(ms []*runtimeapi.Metric) map[string][]*runtimeapi.Metric {
		out := map[string][]*runtimeapi.Metric{}
		for _, m := range ms {
			out[m.GetName()] = append(out[m.GetName()], m)
		}
		return out
	}
	for _, pm := range resp.GetPodMetrics() {
		if pm.GetPodSandboxId() != "sbA" {
			continue
		}
		pod = byName(pm.GetMetrics())
		for _, cm := range pm.GetContainerMetrics() {
			switch cm.GetContainerId() {
			case "c1":
				c1 = byName(cm.GetMetrics())
			case "c2":
				c2 = byName(cm.GetMetrics())
			}
		}
	}
	return pod, c1, c2
}

// Every metric has as many label values as its descriptor has keys, and
// every descriptor has values, given a host with everything.
func TestMetricsMatchTheirDescriptors(t *testing.T) {
	keys := map[string]int{}
	for _, d := range metricDescriptors {
		keys[d.GetName()] = len(d.GetLabelKeys())
	}
	podMs, c1, _ := listMetrics(t)
	for _, ms := range []map[string][]*runtimeapi.Metric{podMs, c1} {
		for name, list := range ms {
			for _, m := range list {
				if n, ok := keys[name]; !ok || n != len(m.GetLabelValues()) {
					t.Errorf("%s %v: %d label values, descriptor has %d (described %v)", name, m.GetLabelValues(), len(m.GetLabelValues()), n, ok)
				}
			}
		}
	}
	for name := range keys {
		if len(podMs[name]) == 0 && len(c1[name]) == 0 {
			t.Errorf("%s has no value", name)
		}
	}
}

func value(t *testing.T, ms map[string][]*runtimeapi.Metric, name string, labels ...string) uint64 {
	t.Helper()
	for _, m := range ms[name] {
		if strings.Join(m.GetLabelValues()[len(commonLabelKeys):], ",") == strings.Join(labels, ",") {
			return m.GetValue().GetValue()
		}
	}
	t.Errorf("%s{%v}: no value", name, labels)
	return 0
}

func TestMetricValuesAndUnits(t *testing.T) {
	podMs, c1, _ := listMetrics(t)
	want := []struct {
		name   string
		labels []string
		v      uint64
	}{
		{"container_cpu_usage_seconds_total", []string{"total"}, 7}, // 7.999999999 s, truncated
		{"container_cpu_user_seconds_total", nil, 5},
		{"container_cpu_cfs_throttled_seconds_total", nil, 1},
		{"container_cpu_cfs_throttled_periods_total", nil, 7},
		{"container_pressure_cpu_waiting_seconds_total", nil, 3}, // some, 3.9 s
		{"container_pressure_io_stalled_seconds_total", nil, 1},  // full, 1.000001 s
		{"container_memory_failures_total", []string{"pgfault", "container"}, 40},
		{"container_memory_failures_total", []string{"pgfault", "hierarchy"}, 50},
		{"container_memory_failures_total", []string{"pgmajfault", "hierarchy"}, 2},
		{"container_memory_swap", nil, 13},
		{"container_oom_events_total", nil, 2},
		{"container_hugetlb_max_usage_bytes", []string{"2MB"}, 4 << 20},
		{"container_fs_writes_bytes_total", []string{"/dev/sda"}, 8192},
		{"container_blkio_device_usage_total", []string{"/dev/sda", "8", "0", "Read"}, 4096},
		{"container_fs_usage_bytes", []string{"/dev/vda1"}, 4096},
		{"container_fs_inodes_free", []string{"/dev/vda1"}, 40},
		{"container_processes", nil, 2},
		{"container_threads", nil, 2},
		{"container_threads_max", nil, 128},
		{"container_ulimits_soft", []string{"max_open_files"}, 1024},
		{"container_spec_cpu_quota", nil, 20000},
		{"container_spec_memory_swap_limit_bytes", nil, 0}, // -1: unlimited
		{"container_spec_memory_reservation_limit_bytes", nil, 1 << 20},
		{"container_start_time_seconds", nil, 900},
		{"container_last_seen", nil, 1000},
	}
	for _, w := range want {
		if got := value(t, c1, w.name, w.labels...); got != w.v {
			t.Errorf("%s{%v} = %d, want %d", w.name, w.labels, got, w.v)
		}
	}
	if got := c1["container_memory_rss"][0].GetLabelValues(); strings.Join(got, ",") != "one,c1,busybox:latest,reserved_c1,ns,a" {
		t.Errorf("container labels = %v", got)
	}
	if got := value(t, podMs, "container_network_transmit_packets_dropped_total", "eth0"); got != 5 {
		t.Errorf("eth0 tx dropped = %d, want 5", got)
	}
	if len(podMs["container_network_receive_bytes_total"]) != 2 { // eth0 and net1, not lo
		t.Errorf("rx bytes = %v", podMs["container_network_receive_bytes_total"])
	}
	if got := podMs["container_network_receive_bytes_total"][0].GetLabelValues(); got[0] != "POD" || got[1] != "sbA" {
		t.Errorf("pod labels = %v", got)
	}
}

// An exited container has the metrics of its record and layer only.
func TestMetricsOfAnExitedContainer(t *testing.T) {
	_, _, c2 := listMetrics(t)
	var names []string
	for name := range c2 {
		names = append(names, name)
	}
	for _, want := range []string{"container_oom_events_total", "container_spec_cpu_shares", "container_start_time_seconds",
		"container_last_seen", "container_fs_usage_bytes", "container_fs_limit_bytes"} {
		if len(c2[want]) != 1 {
			t.Errorf("exited container lacks %s (has %v)", want, names)
		}
	}
	for _, none := range []string{"container_cpu_usage_seconds_total", "container_memory_usage_bytes", "container_processes", "container_threads"} {
		if len(c2[none]) != 0 {
			t.Errorf("exited container has %s", none)
		}
	}
}
