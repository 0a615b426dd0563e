package integration

import (
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// TestPodLifecycle walks one pod and one container through every state.
func TestPodLifecycle(t *testing.T) {
	d := startDaemon(t)
	before := time.Now().UnixNano()
	podCfg := podConfig(t, "lifecycle")
	podID := d.runPod(podCfg)

	// api.proto: "Runtimes must ensure the sandbox is in the ready state on success."
	sb := d.sandboxStatus(podID)
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox state %v, want READY", sb.GetState())
	}
	if ip := sb.GetNetwork().GetIp(); !d.Net.Subnet.Contains(parseIP(ip)) {
		t.Errorf("sandbox IP %q, want one in %v", ip, d.Net.Subnet)
	}
	if sb.GetCreatedAt() < before || sb.GetCreatedAt() > time.Now().UnixNano() {
		t.Errorf("sandbox CreatedAt %d, want between %d and now", sb.GetCreatedAt(), before)
	}

	cfg := shell("main", "echo out; echo err >&2; sleep 1000")
	ctrID := d.create(podID, podCfg, cfg)
	if st := d.containerStatus(ctrID); st.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("after CreateContainer: state %v, want CREATED", st.GetState())
	}
	d.startContainer(ctrID)
	st := d.containerStatus(ctrID)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStartedAt() == 0 {
		t.Fatalf("after StartContainer: state %v StartedAt %d, want RUNNING with StartedAt", st.GetState(), st.GetStartedAt())
	}
	// api.proto log_path: "Path relative to PodSandboxConfig.LogDirectory for
	// container to store the log (STDOUT and STDERR) on the host."
	wantLog := logPath(podCfg, cfg)
	if st.GetLogPath() != wantLog {
		t.Errorf("ContainerStatus LogPath %q, want %q", st.GetLogPath(), wantLog)
	}
	if st.GetImage().GetImage() != "busybox" || !strings.HasPrefix(st.GetImageRef(), "sha256:") {
		t.Errorf("ContainerStatus Image %q ImageRef %q, want busybox and a sha256 id", st.GetImage().GetImage(), st.GetImageRef())
	}
	if !eventually(5*time.Second, func() bool { return hasLines(readLog(t, wantLog), "stdout F out", "stderr F err") }) {
		t.Errorf("log %s lacks \"stdout F out\" and \"stderr F err\": %+v", wantLog, readLog(t, wantLog))
	}

	// api.proto: "The runtime must forcibly kill the container after the grace
	// period is reached."
	stopStart := time.Now()
	if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 2}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if took := time.Since(stopStart); took > 15*time.Second {
		t.Errorf("StopContainer with timeout 2 took %v", took)
	}
	st = d.containerStatus(ctrID)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("after StopContainer: state %v, want EXITED", st.GetState())
	}
	if c := st.GetExitCode(); c != 143 && c != 137 {
		t.Errorf("exit code %d, want 143 (SIGTERM) or 137 (SIGKILL)", c)
	}
	if st.GetReason() != "Error" || st.GetFinishedAt() < stopStart.UnixNano() {
		t.Errorf("reason %q FinishedAt %d, want Error and a time after %d", st.GetReason(), st.GetFinishedAt(), stopStart.UnixNano())
	}
	// api.proto: "This call is idempotent, and must not return an error if the
	// container has already been stopped."
	if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 2}); err != nil {
		t.Errorf("second StopContainer: %v", err)
	}
	if _, err := d.RT.RemoveContainer(d.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: ctrID}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	_, err := d.RT.ContainerStatus(d.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: ctrID})
	wantCode(t, "ContainerStatus after RemoveContainer", err, codes.NotFound)

	if _, err := d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if sb := d.sandboxStatus(podID); sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("after StopPodSandbox: state %v, want NOTREADY", sb.GetState())
	}
	if a := d.Net.Allocations(); len(a) != 0 {
		t.Errorf("after StopPodSandbox (api.proto: \"reclaims network resources (e.g., IP addresses)\"): IPs still allocated: %v", a)
	}
	if _, err := d.RT.RemovePodSandbox(d.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	list, err := d.RT.ListPodSandbox(d.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 0 {
		t.Errorf("ListPodSandbox after removal: %v %v, want empty", list.GetItems(), err)
	}
}

// hasLines reports whether the log holds each "<stream> <tag> <content>".
func hasLines(recs []logRecord, want ...string) bool {
	seen := map[string]bool{}
	for _, r := range recs {
		tag := "F"
		if r.Partial {
			tag = "P"
		}
		seen[r.Stream+" "+tag+" "+r.Content] = true
	}
	for _, w := range want {
		if !seen[w] {
			return false
		}
	}
	return true
}

// TestExitCodes checks exit codes and reasons of containers that end on
// their own.
func TestExitCodes(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "exits")
	podID := d.runPod(podCfg)
	// api.proto: "Exit code of the container. Only required when finished_at != 0."
	// and reason: "Brief CamelCase string explaining why container is in its current state."
	for _, tc := range []struct {
		name, script string
		code         int32
		reason       string
	}{
		{"fails", "exit 3", 3, "Error"},
		{"succeeds", "true", 0, "Completed"},
	} {
		id := d.run(podID, podCfg, shell(tc.name, tc.script))
		st := d.waitExited(id, 10*time.Second)
		if st.GetExitCode() != tc.code || st.GetReason() != tc.reason || st.GetFinishedAt() == 0 {
			t.Errorf("%s (%s): exit code %d reason %q FinishedAt %d, want %d %q and a FinishedAt",
				tc.name, tc.script, st.GetExitCode(), st.GetReason(), st.GetFinishedAt(), tc.code, tc.reason)
		}
		if st.GetFinishedAt() < st.GetStartedAt() {
			t.Errorf("%s: FinishedAt %d before StartedAt %d", tc.name, st.GetFinishedAt(), st.GetStartedAt())
		}
	}
}

// TestSandboxNameConflict runs two sandboxes with the same metadata at once.
func TestSandboxNameConflict(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "twin")
	var wg sync.WaitGroup
	ids := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
			ids[i], errs[i] = resp.GetPodSandboxId(), err
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
			d.KnownIDs[ids[i]] = true
			continue
		}
		if status.Code(err) != codes.AlreadyExists {
			t.Errorf("losing RunPodSandbox: %v, want code AlreadyExists", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 2 RunPodSandbox calls with the same metadata succeeded (%v), want exactly 1", ok, errs)
	}
	list, err := d.RT.ListPodSandbox(d.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 1 {
		t.Errorf("ListPodSandbox: %d items (%v), want 1", len(list.GetItems()), err)
	}
	if a := d.Net.Allocations(); len(a) != 1 {
		t.Errorf("host-local allocations %v, want exactly the winner's", a)
	}
	if n := len(d.monitorProcesses()); n != 1 {
		t.Errorf("%d berth-monitor processes, want 1 (the winner's)", n)
	}
	if p := d.dirEntries(d.State + "/pods"); len(p) != 1 {
		t.Errorf("pod dirs %v, want only the winner's", p)
	}
	if r := d.dirEntries(d.Root + "/sandboxes"); len(r) != 1 {
		t.Errorf("sandbox records %v, want only the winner's", r)
	}
	if ids := d.RuncContainers(); len(ids) != 1 {
		t.Errorf("runc containers %v, want only the winner's berth-pause", ids)
	}
}

// monitorProcesses lists the running berth-monitor processes of this daemon.
func (d *daemon) monitorProcesses() []harness.Proc {
	var out []harness.Proc
	for _, p := range d.ProcessesLeft() {
		if strings.Contains(p.Cmdline, "berth-monitor") {
			out = append(out, p)
		}
	}
	return out
}

// TestPIDNamespace checks the shared and the private PID namespace modes.
func TestPIDNamespace(t *testing.T) {
	d := startDaemon(t)
	// api.proto: "A POD namespace is common to all containers in a pod. For
	// example, a container with a PID namespace of POD expects to view all of
	// the processes in all of the containers in the pod." kubelet sends the
	// mode in both the pod's and the container's config.
	t.Run("pod", func(t *testing.T) {
		pid1 := pid1InPod(t, d, "pid-pod", &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD})
		if !strings.Contains(pid1, "berth-pause") {
			t.Errorf("pid POD: PID 1 runs %q, want berth-pause", pid1)
		}
	})
	// api.proto NamespaceOption.pid: "Note: The CRI default is POD".
	t.Run("default", func(t *testing.T) {
		pid1 := pid1InPod(t, d, "pid-default", nil)
		if !strings.Contains(pid1, "berth-pause") {
			t.Errorf("no namespace options (CRI default POD): PID 1 runs %q, want berth-pause", pid1)
		}
	})
	// api.proto: "A CONTAINER namespace is restricted to a single container."
	t.Run("container", func(t *testing.T) {
		pid1 := pid1InPod(t, d, "pid-container", &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER})
		if !strings.Contains(pid1, "sh -c") && !strings.HasPrefix(pid1, "ps") {
			t.Errorf("pid CONTAINER: PID 1 runs %q, want the container's own command", pid1)
		}
	})
}

// pid1InPod runs `ps` in a new pod whose config and container config carry
// opts (none when nil) and returns what PID 1 runs.
func pid1InPod(t *testing.T, d *daemon, name string, opts *runtimeapi.NamespaceOption) string {
	podCfg := podConfig(t, name)
	cfg := shell("ps", "ps -o pid,args")
	if opts != nil {
		podCfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: opts}
		cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: opts}}
	}
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, cfg)
	d.waitExited(id, 10*time.Second)
	recs := readLog(t, logPath(podCfg, cfg))
	t.Logf("ps in pod %s: %+v", name, recs)
	return pid1Command(t, recs)
}

// pid1Command finds the PID 1 row of `ps -o pid,args` output.
func pid1Command(t *testing.T, recs []logRecord) string {
	t.Helper()
	for _, r := range recs {
		f := strings.Fields(r.Content)
		if len(f) >= 2 && f[0] == "1" {
			return strings.Join(f[1:], " ")
		}
	}
	return ""
}

// TestLogFormat checks the CRI log format's split of long lines.
func TestLogFormat(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "logs")
	podID := d.runPod(podCfg)
	// One 40000-byte line, then two short lines.
	cfg := shell("long", "head -c 40000 /dev/zero | tr '\\0' x; echo; echo second; echo third")
	id := d.run(podID, podCfg, cfg)
	if st := d.waitExited(id, 10*time.Second); st.GetExitCode() != 0 {
		t.Fatalf("container exit code %d", st.GetExitCode())
	}
	recs := readLog(t, logPath(podCfg, cfg))
	var tags []string
	var joined strings.Builder
	var rest []string
	for _, r := range recs {
		if joined.Len() < 40000 {
			tags = append(tags, map[bool]string{true: "P", false: "F"}[r.Partial])
			joined.WriteString(r.Content)
			continue
		}
		rest = append(rest, r.Content)
	}
	if strings.Join(tags, ",") != "P,P,F" {
		t.Errorf("tags of the 40000-byte line: %v, want P,P,F", tags)
	}
	if joined.String() != strings.Repeat("x", 40000) {
		t.Errorf("partial records join to %d bytes, want the 40000-byte line", joined.Len())
	}
	if strings.Join(rest, ",") != "second,third" {
		t.Errorf("lines after the long one: %q, want second,third in order", rest)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Time.Before(recs[i-1].Time) {
			t.Errorf("record %d time %v before record %d's %v", i, recs[i].Time, i-1, recs[i-1].Time)
		}
	}
}

// TestPauseDeathMakesSandboxNotReady kills berth-pause, the PID 1 of a pod's
// shared PID namespace: the sandbox turns NOTREADY (kubelet then recreates
// it), and stopping it still releases the pod's IP and iptables rules.
func TestPauseDeathMakesSandboxNotReady(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "pause-dies")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	id := d.runPod(cfg)
	resp, err := d.RT.PodSandboxStatus(d.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("verbose info has no berth-pause pid (%v): %q", err, resp.GetInfo())
	}
	if err := syscall.Kill(info.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill berth-pause %d: %v", info.Pid, err)
	}
	if !eventually(10*time.Second, func() bool {
		return d.sandboxStatus(id).GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}) {
		t.Fatalf("sandbox still %v after berth-pause died", d.sandboxStatus(id).GetState())
	}
	if _, err := d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if left := d.Net.Allocations(); len(left) > 0 {
		t.Errorf("IP allocations left after StopPodSandbox of a sandbox whose berth-pause died: %v", left)
	}
}
