package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestUpdateContainerResources: runc update changes the cgroup of a running
// container, ContainerStatus reports the new values, and bad requests get
// their class.
func TestUpdateContainerResources(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "resize")
	podID := d.runPod(podCfg)
	cfg := containerConfig("app", "sleep", "1000")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{
		MemoryLimitInBytes: 128 << 20, CpuShares: 512}}
	id := d.run(podID, podCfg, cfg)

	want := &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 96 << 20, CpuShares: 256,
		CpuPeriod: 100000, CpuQuota: 50000}
	if _, err := d.RT.UpdateContainerResources(d.ctx(), &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: want}); err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	cgroup := d.containerCgroupV1(id)
	for file, value := range map[string]int64{
		"memory/memory.limit_in_bytes": 96 << 20, "cpu/cpu.shares": 256, "cpu/cpu.cfs_quota_us": 50000,
	} {
		if got := readCgroupInt(t, filepath.Join("/sys/fs/cgroup", file[:strings.Index(file, "/")], cgroup, file[strings.Index(file, "/")+1:])); got != value {
			t.Errorf("%s = %d after update, want %d", file, got, value)
		}
	}
	got := d.containerStatus(id).GetResources().GetLinux()
	if got.GetMemoryLimitInBytes() != 96<<20 || got.GetCpuQuota() != 50000 {
		t.Errorf("status resources = %v, want the updated ones", got)
	}

	wantCode(t, "update without linux", updateErr(d, id, nil), codes.InvalidArgument)
	wantCode(t, "update of an unknown container", updateErr(d, "0123456789abcdef", want), codes.NotFound)
	wantCode(t, "negative shares", updateErr(d, id, &runtimeapi.LinuxContainerResources{CpuShares: -1}), codes.InvalidArgument)
	exited := d.run(podID, podCfg, containerConfig("done", "true"))
	d.waitExited(exited, 10*time.Second)
	wantCode(t, "update of an exited container", updateErr(d, exited, want), codes.FailedPrecondition)

	if _, err := d.RT.UpdatePodSandboxResources(d.ctx(), &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podID, Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20}}); err != nil {
		t.Errorf("UpdatePodSandboxResources: %v", err)
	}
	_, err := d.RT.UpdatePodSandboxResources(d.ctx(), &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "0123456789abcdef"})
	wantCode(t, "pod resources of an unknown sandbox", err, codes.NotFound)
	_, err = d.RT.CheckpointContainer(d.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id})
	if msg := wantCode(t, "checkpoint", err, codes.Unimplemented); !strings.Contains(msg, "CRIU") {
		t.Errorf("checkpoint error %q does not say why", msg)
	}
	d.stopAndRemovePod(podID)
}

func updateErr(d *daemon, id string, linux *runtimeapi.LinuxContainerResources) error {
	_, err := d.RT.UpdateContainerResources(d.ctx(), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: linux})
	return err
}

// containerCgroupV1 is the container's cgroup path below a v1 hierarchy,
// read from /proc/<pid>/cgroup.
func (d *daemon) containerCgroupV1(id string) string {
	d.T.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.containerPid(id)), "cgroup"))
	if err != nil {
		d.T.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "memory" {
			return parts[2]
		}
	}
	d.T.Fatalf("no memory cgroup in %s", data)
	return ""
}

func readCgroupInt(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
