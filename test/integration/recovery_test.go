package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const counterScript = "i=0; while true; do echo $i; i=$((i+1)); sleep 0.1; done"

type counterPod struct {
	cfg   *runtimeapi.PodSandboxConfig
	ctr   *runtimeapi.ContainerConfig
	podID string
	ctrID string
	ip    string
	pid   int
}

// TestKill9Recovery kills the daemon with SIGKILL while pods run and a
// container exits, and checks that the restarted daemon finds everything as
// it is.
func TestKill9Recovery(t *testing.T) {
	d := startDaemon(t)
	pods := make([]*counterPod, 3)
	for i := range pods {
		p := &counterPod{cfg: podConfig(t, fmt.Sprintf("counter-%d", i)), ctr: shell("counter", counterScript)}
		p.podID = d.runPod(p.cfg)
		p.ip = d.sandboxStatus(p.podID).GetNetwork().GetIp()
		p.ctrID = d.run(p.podID, p.cfg, p.ctr)
		p.pid = d.containerPid(p.ctrID)
		pods[i] = p
	}
	exiter := d.run(pods[0].podID, pods[0].cfg, shell("exiter", "sleep 3; exit 7"))
	time.Sleep(300 * time.Millisecond)

	killedAt := time.Now()
	d.Kill9()
	time.Sleep(4 * time.Second)
	restartedAt := time.Now()
	d.Start()

	for _, p := range pods {
		if sb := d.sandboxStatus(p.podID); sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sb.GetNetwork().GetIp() != p.ip {
			t.Errorf("sandbox %s after restart: state %v IP %q, want READY with IP %q", p.cfg.Metadata.Name, sb.GetState(), sb.GetNetwork().GetIp(), p.ip)
		}
		if st := d.containerStatus(p.ctrID); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("counter of %s after restart: state %v, want RUNNING", p.cfg.Metadata.Name, st.GetState())
		}
		if pid := d.containerPid(p.ctrID); pid != p.pid {
			t.Errorf("counter of %s after restart: pid %d, want %d", p.cfg.Metadata.Name, pid, p.pid)
		}
	}
	st := d.waitExited(exiter, 5*time.Second)
	if st.GetExitCode() != 7 || st.GetReason() != "Error" {
		t.Errorf("container that exited while the daemon was down: exit code %d reason %q, want 7 Error", st.GetExitCode(), st.GetReason())
	}
	if f := st.GetFinishedAt(); f < killedAt.UnixNano() || f > restartedAt.UnixNano() {
		t.Errorf("FinishedAt %v, want between the kill (%v) and the restart (%v)",
			time.Unix(0, f), killedAt, restartedAt)
	}

	lengths := make([]int, len(pods))
	for i, p := range pods {
		lengths[i] = checkCounterLog(t, logPath(p.cfg, p.ctr))
	}
	time.Sleep(time.Second)
	for i, p := range pods {
		if n := checkCounterLog(t, logPath(p.cfg, p.ctr)); n <= lengths[i] {
			t.Errorf("counter log of %s stopped growing after the restart: %d then %d lines", p.cfg.Metadata.Name, lengths[i], n)
		}
	}
}

// checkCounterLog checks that a counter's log is 0, 1, 2, … without a gap
// and returns its length.
func checkCounterLog(t *testing.T, path string) int {
	t.Helper()
	recs := readLog(t, path)
	for i, r := range recs {
		if r.Stream != "stdout" || r.Partial || r.Content != strconv.Itoa(i) {
			t.Errorf("counter log %s record %d: %+v, want \"stdout F %d\"", path, i, r, i)
			return len(recs)
		}
	}
	return len(recs)
}

// TestKill9DuringRunPodSandbox kills the daemon while sandboxes are being
// made: after the restart, every sandbox it lists works, and removing them
// leaves nothing behind.
func TestKill9DuringRunPodSandbox(t *testing.T) {
	d := startDaemon(t)
	reported := map[string]bool{}
	for round, delay := range []time.Duration{30 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond} {
		var wg sync.WaitGroup
		rt := d.RT
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := podConfig(t, fmt.Sprintf("half-%d-%d", round, i))
				_, _ = rt.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg}) // the daemon is killed mid-call
			}()
		}
		time.Sleep(delay + time.Duration(rand.IntN(5))*time.Millisecond)
		d.Kill9()
		wg.Wait()
		d.Start()

		list, err := d.RT.ListPodSandbox(d.ctx(), &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatalf("round %d: ListPodSandbox: %v", round, err)
		}
		t.Logf("round %d (kill after %v): %d sandboxes survived", round, delay, len(list.GetItems()))
		for _, item := range list.GetItems() {
			d.KnownIDs[item.GetId()] = true
			checkSandboxWorks(t, d, item.GetId())
		}
		for _, item := range list.GetItems() {
			d.stopAndRemovePod(item.GetId())
		}
		d.CollectIDs()
		for _, problem := range d.Leftovers() {
			if !reported[problem] {
				reported[problem] = true
				t.Errorf("round %d: leftover after removing every sandbox: %s", round, problem)
			}
		}
	}
}

// checkSandboxWorks runs a container in a listed sandbox.
func checkSandboxWorks(t *testing.T, d *daemon, podID string) {
	t.Helper()
	sb := d.sandboxStatus(podID)
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox %s listed after the restart is %v, want READY", podID, sb.GetState())
		return
	}
	if !d.Net.Subnet.Contains(parseIP(sb.GetNetwork().GetIp())) {
		t.Errorf("sandbox %s listed after the restart has IP %q, want one in %v", podID, sb.GetNetwork().GetIp(), d.Net.Subnet)
	}
	// Only the metadata is known here; the sandbox's own log directory is used.
	cfg := &runtimeapi.PodSandboxConfig{Metadata: sb.GetMetadata(), Linux: &runtimeapi.LinuxPodSandboxConfig{}}
	id := d.run(podID, cfg, shell("probe", "echo alive"))
	st := d.waitExited(id, 10*time.Second)
	if st.GetExitCode() != 0 {
		t.Errorf("container in sandbox %s: exit code %d, want 0", podID, st.GetExitCode())
	}
	if recs := readLog(t, st.GetLogPath()); !hasLines(recs, "stdout F alive") {
		t.Errorf("container in sandbox %s: log %+v", podID, recs)
	}
}

// TestSIGTERMLeavesPodsRunning stops the daemon gracefully: its containers
// keep running and are found again after the restart.
func TestSIGTERMLeavesPodsRunning(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "survivor")
	podID := d.runPod(podCfg)
	ctrID := d.run(podID, podCfg, containerConfig("sleeper", "sleep", "1000"))
	pid := d.containerPid(ctrID)

	d.Stop()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("container process %d after the daemon's SIGTERM: %v, want alive", pid, err)
	}
	if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); !strings.HasPrefix(string(cmd), "sleep") {
		t.Errorf("pid %d runs %q, want the container's sleep", pid, cmd)
	}
	d.Start()
	if st := d.containerStatus(ctrID); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container after the restart: %v, want RUNNING", st.GetState())
	}
	if got := d.containerPid(ctrID); got != pid {
		t.Errorf("container pid after the restart: %d, want %d", got, pid)
	}
	if sb := d.sandboxStatus(podID); sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox after the restart: %v, want READY", sb.GetState())
	}
}
