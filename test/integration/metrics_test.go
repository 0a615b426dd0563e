package integration

import (
	"os"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podMetrics returns a pod's metrics by name, pod-level and its containers'
// alike, after checking each against its descriptor's label keys.
func (d *daemon) podMetrics(podID string) map[string][]*runtimeapi.Metric {
	d.T.Helper()
	descs, err := d.RT.ListMetricDescriptors(d.ctx(), &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		d.T.Fatalf("ListMetricDescriptors: %v", err)
	}
	keys := map[string]int{}
	for _, desc := range descs.GetDescriptors() {
		keys[desc.GetName()] = len(desc.GetLabelKeys())
	}
	resp, err := d.RT.ListPodSandboxMetrics(d.ctx(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		d.T.Fatalf("ListPodSandboxMetrics: %v", err)
	}
	out := map[string][]*runtimeapi.Metric{}
	add := func(ms []*runtimeapi.Metric) {
		for _, m := range ms {
			if n, ok := keys[m.GetName()]; !ok || n != len(m.GetLabelValues()) {
				d.T.Errorf("%s: %d label values, descriptor has %d keys (described: %v)", m.GetName(), len(m.GetLabelValues()), n, ok)
			}
			out[m.GetName()] = append(out[m.GetName()], m)
		}
	}
	for _, pm := range resp.GetPodMetrics() {
		if pm.GetPodSandboxId() == podID {
			add(pm.GetMetrics())
			for _, cm := range pm.GetContainerMetrics() {
				add(cm.GetMetrics())
			}
		}
	}
	return out
}

// TestPodSandboxMetricsOfLiveContainer reads cAdvisor's metric set of a
// running container with resources from this host's cgroups and procfs.
func TestPodSandboxMetricsOfLiveContainer(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "metrics")
	podID := d.runPod(podCfg)
	created := time.Now().Unix()
	cfg := shell("m", "sleep 1000 & wait")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{
		CpuPeriod: 100000, CpuQuota: 20000, CpuShares: 512, MemoryLimitInBytes: 64 << 20,
	}}
	d.run(podID, podCfg, cfg)

	var ms map[string][]*runtimeapi.Metric
	v := func(name string) uint64 {
		if len(ms[name]) == 0 {
			return 0
		}
		return ms[name][0].GetValue().GetValue()
	}
	if !eventually(10*time.Second, func() bool { ms = d.podMetrics(podID); return v("container_processes") == 2 }) {
		t.Errorf("container_processes = %d, want 2 (sh and sleep)", v("container_processes"))
	}
	for _, c := range []struct {
		name string
		ok   func(uint64) bool
		want string
	}{
		{"container_threads", func(n uint64) bool { return n >= 2 }, ">= 2"},
		{"container_file_descriptors", func(n uint64) bool { return n >= 3 }, ">= 3"},
		{"container_ulimits_soft", func(n uint64) bool { return n > 0 }, "> 0"},
		{"container_fs_limit_bytes", func(n uint64) bool { return n > 0 }, "> 0"},
		{"container_fs_inodes_total", func(n uint64) bool { return n >= v("container_fs_inodes_free") && n > 0 }, ">= inodes free"},
		{"container_memory_usage_bytes", func(n uint64) bool { return n > 0 }, "> 0"},
		{"container_spec_memory_limit_bytes", func(n uint64) bool { return n == 64<<20 }, "64 MiB"},
		{"container_spec_cpu_quota", func(n uint64) bool { return n == 20000 }, "20000"},
		{"container_spec_cpu_shares", func(n uint64) bool { return n == 512 }, "512"},
		{"container_start_time_seconds", func(n uint64) bool { return int64(n) >= created-1 && int64(n) <= time.Now().Unix() }, "the creation time"},
		{"container_last_seen", func(n uint64) bool { return int64(n) >= created }, "now"},
	} {
		if got := v(c.name); len(ms[c.name]) == 0 || !c.ok(got) {
			t.Errorf("%s = %d (%d values), want %s", c.name, got, len(ms[c.name]), c.want)
		}
	}
	for _, name := range []string{"container_oom_events_total", "container_cpu_cfs_periods_total", "container_memory_failures_total",
		"container_network_receive_packets_total", "container_network_transmit_packets_dropped_total", "container_cpu_usage_seconds_total"} {
		if len(ms[name]) == 0 {
			t.Errorf("%s has no value", name)
		}
	}
	// PSI comes from the unified hierarchy: cgroup v2, or a hybrid host's unified/.
	if _, err := os.Stat("/proc/pressure/cpu"); err == nil && hasUnifiedHierarchy() && len(ms["container_pressure_cpu_waiting_seconds_total"]) == 0 {
		t.Error("no container_pressure_cpu_waiting_seconds_total on a host with PSI and a unified hierarchy")
	}
	d.stopAndRemovePod(podID)
}

func hasUnifiedHierarchy() bool {
	for _, f := range []string{"/sys/fs/cgroup/cgroup.controllers", "/sys/fs/cgroup/unified/cgroup.controllers"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}
