package integration

import (
	"encoding/json"
	"strconv"
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

// counted reads the numbers a counting container logged, in order.
func counted(t *testing.T, path string) []int {
	t.Helper()
	var out []int
	for _, r := range readLog(t, path) {
		if n, err := strconv.Atoi(strings.TrimSpace(r.Content)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestMonitorDeathIsNeverALie kills a pod's berth-monitor with SIGKILL
// while one container writes a line every 20 ms and another sleeps. The
// daemon learns of it at once and a new monitor takes the pod over: the pod
// stays ready (its berth-pause is adopted); both containers survive it
// (the daemon held their output FIFOs, so the writer's writes never
// failed) and stay running; the writer's log goes on after the gap, in
// order, losing at most what the dead monitor had read and not written;
// exec works; a stop ends each with reason Unknown (their exit status died
// with the monitor).
func TestMonitorDeathIsNeverALie(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "monitor-dies")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	podID := d.runPod(cfg)
	sleeper := d.run(podID, cfg, shell("sleeper", "exec sleep 3600"))
	writerCfg := shell("writer", "i=0; while true; do echo $i; i=$((i+1)); sleep 0.02; done")
	writer := d.run(podID, cfg, writerCfg)
	if !eventually(10*time.Second, func() bool { return len(counted(t, logPath(cfg, writerCfg))) >= 5 }) {
		t.Fatal("the writer logged nothing")
	}
	old := d.monitorPid(t, podID)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill monitor %d: %v", old, err)
	}
	killedAt := len(counted(t, logPath(cfg, writerCfg)))

	var replacement int
	if !eventually(20*time.Second, func() bool {
		replacement = d.monitorPid(t, podID)
		return replacement != old
	}) {
		t.Fatal("no new monitor named in the sandbox's status")
	}
	if !eventually(20*time.Second, func() bool { return len(counted(t, logPath(cfg, writerCfg))) >= killedAt+20 }) {
		t.Fatalf("the writer's log stopped at the monitor's death: %d lines, %d before", len(counted(t, logPath(cfg, writerCfg))), killedAt)
	}
	nums := counted(t, logPath(cfg, writerCfg))
	gaps := 0
	for i := 1; i < len(nums); i++ {
		if nums[i] <= nums[i-1] {
			t.Fatalf("log out of order at line %d: %d after %d", i, nums[i], nums[i-1])
		}
		if nums[i] != nums[i-1]+1 {
			gaps++
		}
	}
	if gaps > 1 {
		t.Errorf("%d gaps in the writer's log, want at most the one chunk the dead monitor held", gaps)
	}
	if n := len(d.monitorProcesses()); n != 1 {
		t.Errorf("%d berth-monitor processes, want the replacement only", n)
	}
	if st := d.sandboxStatus(podID).GetState(); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox %v after the takeover, want ready (berth-pause adopted)", st)
	}
	for _, id := range []string{sleeper, writer} {
		if st := d.containerStatus(id).GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("container %s %v after its monitor died, want running", id, st)
		}
	}
	out, err := d.execSync(sleeper, 10, "echo", "still here")
	if err != nil || strings.TrimSpace(string(out.GetStdout())) != "still here" {
		t.Errorf("exec in an adopted container: %v %q", err, out.GetStdout())
	}
	for _, id := range []string{sleeper, writer} {
		if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 2}); err != nil {
			t.Fatalf("StopContainer of an adopted container: %v", err)
		}
		if st := d.containerStatus(id); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetReason() != "Unknown" || st.GetExitCode() != 255 {
			t.Errorf("adopted container after stop: %v %q %d, want exited, reason Unknown, 255", st.GetState(), st.GetReason(), st.GetExitCode())
		}
	}
	d.removeAndAwaitReaped(t, podID)
}

// removeAndAwaitReaped removes a pod whose monitor died. The dead
// monitor's children went to the host's init, which reaps them in its own
// time: the test waits for that before the leftover check.
func (d *daemon) removeAndAwaitReaped(t *testing.T, podID string) {
	t.Helper()
	if _, err := d.RT.RemovePodSandbox(d.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if !eventually(30*time.Second, func() bool { return len(d.ProcessesLeft()) == 0 }) {
		t.Logf("processes of the pod still there, unreaped by init: %v", d.ProcessesLeft())
	}
}

// TestMonitorDeathWhileTheDaemonIsDown: a monitor killed while the daemon
// is down (kill -9 of both) is taken over when the daemon starts, before
// it answers: the pod stays ready, its container keeps running, and what
// it writes after the takeover reaches its log. (Output written while both
// were down finds no reader and kills the writer: the daemon holds the
// FIFOs only while it runs.)
func TestMonitorDeathWhileTheDaemonIsDown(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "monitor-and-daemon-die")
	podID := d.runPod(cfg)
	waiterCfg := shell("waiter", "while [ ! -f /tmp/go ]; do sleep 0.05; done; echo after the takeover; exec sleep 3600")
	waiter := d.run(podID, cfg, waiterCfg)
	old := d.monitorPid(t, podID)
	d.Kill9()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill monitor %d: %v", old, err)
	}
	d.Start()
	if st := d.sandboxStatus(podID).GetState(); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox %v after the restart, want ready (its monitor taken over)", st)
	}
	if pid := d.monitorPid(t, podID); pid == old {
		t.Errorf("the sandbox still names the dead monitor %d", pid)
	}
	if st := d.containerStatus(waiter).GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container %v after the restart, want running", st)
	}
	if _, err := d.execSync(waiter, 10, "touch", "/tmp/go"); err != nil {
		t.Fatalf("exec: %v", err)
	}
	if !eventually(20*time.Second, func() bool {
		for _, r := range readLog(t, logPath(cfg, waiterCfg)) {
			if r.Content == "after the takeover" {
				return true
			}
		}
		return false
	}) {
		t.Errorf("what the container wrote after the takeover is not in its log")
	}
	d.removeAndAwaitReaped(t, podID)
}

// TestMonitorDeathOfAnExitedContainerIsItsExit: a container whose process
// ended while no monitor ran (killed during the gap) is reported exited,
// reason Unknown, once the new monitor looks — never running.
func TestMonitorDeathOfAnExitedContainerIsItsExit(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "monitor-dies-2")
	podID := d.runPod(cfg)
	id := d.run(podID, cfg, shell("short", "exec sleep 3600"))
	resp, err := d.RT.ContainerStatus(d.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("verbose info has no pid (%v): %q", err, resp.GetInfo())
	}
	// Stop the monitor and the container together: the new monitor finds
	// no process to adopt.
	mon := d.monitorPid(t, podID)
	if err := syscall.Kill(info.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(mon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(20*time.Second, func() bool {
		return d.containerStatus(id).GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
	}) {
		t.Fatalf("container %v after it and its monitor were killed, want exited", d.containerStatus(id).GetState())
	}
	if st := d.containerStatus(id); st.GetExitCode() != 137 && (st.GetExitCode() != 255 || st.GetReason() != "Unknown") {
		t.Errorf("exit %d %q: want 137 (the monitor saw it) or 255 Unknown", st.GetExitCode(), st.GetReason())
	}
	d.removeAndAwaitReaped(t, podID)
}
