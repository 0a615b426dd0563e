package integration

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// monitorPid reads a sandbox's monitor pid from its verbose status.
func (d *daemon) monitorPid(t *testing.T, id string) int {
	t.Helper()
	resp, err := d.RT.PodSandboxStatus(d.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	var info struct {
		MonitorPid int `json:"monitorPid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.MonitorPid <= 0 {
		t.Fatalf("verbose info has no monitor pid (%v): %q", err, resp.GetInfo())
	}
	return info.MonitorPid
}

// TestMonitorDeathIsNeverALie kills a pod's berth-monitor with SIGKILL.
// The daemon learns of it at once: a new monitor takes the pod over, the
// pod stays ready (its berth-pause is adopted), a container still running
// stays running and can be exec'd into and stopped, and a container that
// died with the monitor (its output pipe broke) is reported exited, reason
// Unknown, exit code 255 — never running.
func TestMonitorDeathIsNeverALie(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "monitor-dies")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	podID := d.runPod(cfg)
	sleeper := d.run(podID, cfg, shell("sleeper", "exec sleep 3600"))
	writer := d.run(podID, cfg, shell("writer", "while true; do echo tick; sleep 0.05; done"))
	old := d.monitorPid(t, podID)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill monitor %d: %v", old, err)
	}

	if !eventually(20*time.Second, func() bool {
		return d.containerStatus(writer).GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
	}) {
		t.Fatalf("writer still %v after its monitor died", d.containerStatus(writer).GetState())
	}
	if st := d.containerStatus(writer); st.GetExitCode() != 255 || st.GetReason() != "Unknown" || st.GetMessage() == "" {
		t.Errorf("writer: exit code %d, reason %q, message %q; want 255, Unknown and a message", st.GetExitCode(), st.GetReason(), st.GetMessage())
	}
	var replacement int
	if !eventually(20*time.Second, func() bool {
		replacement = d.monitorPid(t, podID)
		return replacement != old
	}) {
		t.Fatal("no new monitor named in the sandbox's status")
	}
	if n := len(d.monitorProcesses()); n != 1 {
		t.Errorf("%d berth-monitor processes, want the replacement only", n)
	}
	if st := d.sandboxStatus(podID).GetState(); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox %v after the takeover, want ready (berth-pause adopted)", st)
	}
	if st := d.containerStatus(sleeper).GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("sleeper %v after its monitor died, want running", st)
	}
	out, err := d.execSync(sleeper, 10, "echo", "still here")
	if err != nil || strings.TrimSpace(string(out.GetStdout())) != "still here" {
		t.Errorf("exec in the adopted container: %v %q", err, out.GetStdout())
	}
	if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: sleeper, Timeout: 2}); err != nil {
		t.Fatalf("StopContainer of the adopted container: %v", err)
	}
	if st := d.containerStatus(sleeper); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetReason() != "Unknown" {
		t.Errorf("adopted container after stop: %v %q, want exited with reason Unknown", st.GetState(), st.GetReason())
	}
	// The dead monitor's children went to the host's init, which reaps
	// them in its own time: wait for that before the leftover check.
	if _, err := d.RT.RemovePodSandbox(d.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if !eventually(30*time.Second, func() bool { return len(d.ProcessesLeft()) == 0 }) {
		t.Logf("processes of the pod still there, unreaped by init: %v", d.ProcessesLeft())
	}
}
