package integration

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// TestSystemdCgroupDriver runs berth serve with cgroup_driver = "systemd"
// under a systemd of the test's own (harness.PrivateSystemd; skipped where
// it cannot run): RuntimeConfig says SYSTEMD; berth-pause and a container
// are the scopes berth-<id>.scope in the expanded pod slice, and systemd
// knows them; stats are read from the scope and UpdateContainerResources
// reaches it; a cgroupfs parent is refused; removal leaves no scope. The
// node agent in berth serve lays its pods out as slices and stops the
// pod's slice once the pod is deleted.
func TestSystemdCgroupDriver(t *testing.T) {
	sd := harness.StartPrivateSystemd(t)
	d := startDaemon(t, func(t *testing.T, o *harness.Options) { sd.Serve(t, o) })
	rc, err := d.RT.RuntimeConfig(d.ctx(), &runtimeapi.RuntimeConfigRequest{})
	if err != nil || rc.GetLinux().GetCgroupDriver() != runtimeapi.CgroupDriver_SYSTEMD {
		t.Fatalf("RuntimeConfig = %v, %v; want SYSTEMD", rc, err)
	}

	podCfg := podConfig(t, "sd")
	slice := "kubepods-besteffort-pod" + podCfg.GetMetadata().GetUid() + ".slice"
	podCfg.Linux = &runtimeapi.LinuxPodSandboxConfig{CgroupParent: slice, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}}}
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, containerConfig("app", "sleep", "1000"))
	sliceDir := filepath.Join(sd.Roots["memory"], "kubepods.slice", "kubepods-besteffort.slice", slice)
	scopes := map[string]string{}
	for what, unitID := range map[string]string{"berth-pause": podID, "container": id} {
		unit := "berth-" + unitID + ".scope"
		scopes[unit] = filepath.Join(sliceDir, unit)
		procs, err := os.ReadFile(filepath.Join(scopes[unit], "cgroup.procs"))
		if err != nil || strings.TrimSpace(string(procs)) == "" {
			t.Errorf("%s: scope %s: processes %q, %v; want its process there", what, scopes[unit], procs, err)
		}
		if out, err := sd.Systemctl("is-active", unit); out != "active" {
			t.Errorf("%s: systemctl is-active %s = %q, %v", what, unit, out, err)
		}
	}

	stats := d.containerStats(id)
	if stats.GetMemory().GetWorkingSetBytes().GetValue() == 0 || stats.GetCpu().GetUsageCoreNanoSeconds().GetValue() == 0 {
		t.Errorf("container stats %v: want memory and CPU read from the scope", stats)
	}
	if _, err := d.RT.UpdateContainerResources(d.ctx(), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 96 << 20}}); err != nil {
		t.Errorf("UpdateContainerResources: %v", err)
	} else if got := readCgroupInt(t, filepath.Join(scopes["berth-"+id+".scope"], "memory.limit_in_bytes")); got != 96<<20 {
		t.Errorf("memory.limit_in_bytes of the scope = %d after update, want %d", got, 96<<20)
	}

	bad := podConfig(t, "sd-cgroupfs")
	bad.Linux = &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/besteffort/pod1"}
	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: bad})
	if msg := wantCode(t, "cgroupfs parent under systemd", err, codes.InvalidArgument); !strings.Contains(msg, "cgroup_parent") {
		t.Errorf("error %q does not name cgroup_parent", msg)
	}

	d.stopAndRemovePod(podID)
	checkScopesRemoved(t, sd, scopes)
	checkAgentPodSlice(t, d, sd)
}

func checkScopesRemoved(t *testing.T, sd *harness.PrivateSystemd, scopes map[string]string) {
	t.Helper()
	for unit, dir := range scopes {
		if !eventually(10*time.Second, func() bool { _, err := os.Stat(dir); return errors.Is(err, fs.ErrNotExist) }) {
			t.Errorf("scope %s is left after RemovePodSandbox", dir)
		}
		if out, _ := sd.Systemctl("is-active", unit); out == "active" {
			t.Errorf("unit %s still active after RemovePodSandbox", unit)
		}
	}
}

// checkAgentPodSlice runs a Guaranteed pod through the agent: it lands in
// berth-kubepods-pod<uid>.slice, which the agent made with the pod's
// limits before the sandbox, and which is stopped (unit inactive,
// directory gone) once the pod is deleted.
func checkAgentPodSlice(t *testing.T, d *daemon, sd *harness.PrivateSystemd) {
	t.Helper()
	d.MustBerth("apply", "-f", guaranteedPod(t, "sliced"))
	pattern := filepath.Join(sd.Roots["memory"], "berth.slice", "berth-kubepods.slice",
		"berth-kubepods-pod*.slice", "berth-*.scope")
	var scopes []string
	if !eventually(60*time.Second, func() bool { scopes, _ = filepath.Glob(pattern); return len(scopes) > 0 }) {
		t.Fatalf("agent pod: no scope %s after 60s\n%s", pattern, d.LogTail(40))
	}
	slice := filepath.Base(filepath.Dir(scopes[0]))
	if t.Failed() || !checkPodCgroupLimits(t, filepath.Dir(scopes[0]), filepath.Join(sd.Roots["cpu"], strings.TrimPrefix(filepath.Dir(scopes[0]), sd.Roots["memory"]))) {
		out, _ := sd.Systemctl("show", slice, "-p", "MemoryLimit,CPUShares,CPUQuotaPerSecUSec,ActiveState,Wants")
		t.Logf("systemctl show %s:\n%s", slice, out)
	}
	d.MustBerth("delete", "pod", "sliced", "--grace-period=1") // sleep, PID 1, ignores SIGTERM
	if !eventually(20*time.Second, func() bool { _, err := os.Stat(filepath.Dir(scopes[0])); return errors.Is(err, fs.ErrNotExist) }) {
		t.Errorf("agent pod: slice directory %s is left after delete", filepath.Dir(scopes[0]))
	}
	if out, _ := sd.Systemctl("is-active", slice); out == "active" {
		t.Errorf("agent pod: unit %s still active after delete", slice)
	}
}
