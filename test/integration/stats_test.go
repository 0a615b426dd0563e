package integration

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func (d *daemon) containerStats(id string) *runtimeapi.ContainerStats {
	d.T.Helper()
	resp, err := d.RT.ContainerStats(d.ctx(), &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		d.T.Fatalf("ContainerStats %s: %v", id, err)
	}
	return resp.GetStats()
}

func (d *daemon) podStats(id string) *runtimeapi.PodSandboxStats {
	d.T.Helper()
	resp, err := d.RT.PodSandboxStats(d.ctx(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	if err != nil {
		d.T.Fatalf("PodSandboxStats %s: %v", id, err)
	}
	return resp.GetStats()
}

// TestContainerStatsOfBusyContainer: CPU time grows and gives a rate, the
// working set is above zero, the pod counts its processes, and the writable
// layer grows once the container writes a file.
func TestContainerStatsOfBusyContainer(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "stats")
	podID := d.runPod(podCfg)
	writer := d.run(podID, podCfg, shell("write", "sleep 3; dd if=/dev/zero of=/blob bs=1024 count=2048; sleep 1000"))
	before := d.containerStats(writer).GetWritableLayer().GetUsedBytes().GetValue() // before the write, 3 s ahead
	burner := d.run(podID, podCfg, shell("burn", "while :; do :; done"))

	first := d.containerStats(burner)
	time.Sleep(time.Second)
	second := d.containerStats(burner)
	if a, b := first.GetCpu().GetUsageCoreNanoSeconds().GetValue(), second.GetCpu().GetUsageCoreNanoSeconds().GetValue(); b <= a {
		t.Errorf("CPU time did not grow while burning: %d then %d", a, b)
	}
	if rate := second.GetCpu().GetUsageNanoCores(); rate == nil || rate.GetValue() < 1e8 {
		t.Errorf("usage_nano_cores = %v, want at least a tenth of a core", rate)
	}
	if ws := second.GetMemory().GetWorkingSetBytes().GetValue(); ws == 0 || ws > second.GetMemory().GetUsageBytes().GetValue() {
		t.Errorf("working set %d, usage %d: want 0 < working set <= usage", ws, second.GetMemory().GetUsageBytes().GetValue())
	}
	if second.GetAttributes().GetMetadata().GetName() != "burn" {
		t.Errorf("attributes = %v", second.GetAttributes())
	}

	grown := eventually(15*time.Second, func() bool {
		return d.containerStats(writer).GetWritableLayer().GetUsedBytes().GetValue() >= before+(2<<20)
	})
	if !grown {
		t.Errorf("writable layer %d bytes, want at least %d after writing 2 MiB",
			d.containerStats(writer).GetWritableLayer().GetUsedBytes().GetValue(), before+(2<<20))
	}

	pod := d.podStats(podID)
	if n := pod.GetLinux().GetProcess().GetProcessCount().GetValue(); n < 2 {
		t.Errorf("pod process count = %d, want >= 2", n)
	}
	if n := len(pod.GetLinux().GetContainers()); n != 2 {
		t.Errorf("pod stats hold %d containers, want 2", n)
	}
	list, err := d.RT.ListContainerStats(d.ctx(), &runtimeapi.ListContainerStatsRequest{
		Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: podID, Id: writer}})
	if err != nil || len(list.GetStats()) != 1 || list.GetStats()[0].GetAttributes().GetId() != writer {
		t.Errorf("ListContainerStats by id: %v, %v", list.GetStats(), err)
	}
	d.stopAndRemovePod(podID)
}

// TestPodStatsNetwork reads eth0's counters from the pod's namespace after
// the pod sent traffic to its gateway.
func TestPodStatsNetwork(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "netstats")
	podID := d.runPod(podCfg)
	gateway := d.Net.Prefix() + "1"
	d.run(podID, podCfg, shell("talk", "while :; do wget -q -T 1 -O /dev/null http://"+gateway+":1/; sleep 0.2; done"))
	var eth0 *runtimeapi.NetworkInterfaceUsage
	ok := eventually(15*time.Second, func() bool {
		eth0 = d.podStats(podID).GetLinux().GetNetwork().GetDefaultInterface()
		return eth0.GetTxBytes().GetValue() > 0 && eth0.GetRxBytes().GetValue() > 0
	})
	if !ok || eth0.GetName() != "eth0" {
		t.Errorf("default interface = %v, want eth0 with rx and tx bytes", eth0)
	}
	metrics, err := d.RT.ListPodSandboxMetrics(d.ctx(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil || len(metrics.GetPodMetrics()) != 1 || len(metrics.GetPodMetrics()[0].GetMetrics()) == 0 {
		t.Errorf("ListPodSandboxMetrics = %v, %v", metrics, err)
	}
	d.stopAndRemovePod(podID)
}
