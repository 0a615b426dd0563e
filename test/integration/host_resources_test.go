package integration

import (
	"encoding/json"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/hostcgroup"
)

// TestKubeletResourcesFollowTheHost: kubelet sends a hugepage limit for
// every page size the node has (limit 0 when the pod sets none), whether
// or not the hugetlb controller is mounted. The container runs, resource
// updates with the same settings succeed, and Status verbose info says
// what was left out.
func TestKubeletResourcesFollowTheHost(t *testing.T) {
	host, err := hostcgroup.Detect()
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	podCfg := podConfig(t, "kubelet-resources")
	podID := d.runPod(podCfg)
	res := &runtimeapi.LinuxContainerResources{
		CpuShares: 102, CpuPeriod: 100000, CpuQuota: 20000,
		MemoryLimitInBytes: 64 << 20, MemorySwapLimitInBytes: 64 << 20,
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB"}, {PageSize: "1GB"}},
	}
	cfg := containerConfig("app", "sleep", "1000")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: res}
	id := d.run(podID, podCfg, cfg)
	if st := d.containerStatus(id); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container state %v, want running", st.GetState())
	}
	if _, err := d.RT.UpdateContainerResources(d.ctx(), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res}); err != nil {
		t.Errorf("UpdateContainerResources with kubelet's hugepage limits: %v", err)
	}
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		CgroupControllers []string `json:"cgroupControllers"`
		DroppedResources  []string `json:"droppedResources"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["runtime"]), &info); err != nil {
		t.Fatalf("Status info %q: %v", resp.GetInfo()["runtime"], err)
	}
	if !slices.Equal(info.CgroupControllers, host.Names()) {
		t.Errorf("Status cgroupControllers %v, want %v", info.CgroupControllers, host.Names())
	}
	if dropped := slices.Contains(info.DroppedResources, "hugepage_limits (hugetlb)"); dropped == host.Has("hugetlb") {
		t.Errorf("hugetlb controller %v, but Status droppedResources = %v", host.Has("hugetlb"), info.DroppedResources)
	}
	t.Logf("host controllers %v; left out: %v", info.CgroupControllers, info.DroppedResources)
	d.stopAndRemovePod(podID)
}
