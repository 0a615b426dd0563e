package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/pod"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sleeper runs `sleep 1000` with an env var and a working directory, so
// that execs can show they inherit both.
func sleeper(name string) *runtimeapi.ContainerConfig {
	cfg := containerConfig(name, "sleep", "1000")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "BERTH_EXEC_TEST", Value: []byte("inherited")}}
	cfg.WorkingDir = "/tmp"
	return cfg
}

func (d *daemon) execSync(id string, timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
	// ExecSync may return 2×16 MiB: more than gRPC's default 4 MiB.
	return d.RT.ExecSync(d.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout},
		grpc.MaxCallRecvMsgSize(40<<20))
}

func TestExecSync(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "execsync")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, sleeper("sleeper"))

	resp, err := d.execSync(id, 0, "sh", "-c", "echo out; echo err >&2; echo $BERTH_EXEC_TEST; pwd; exit 3")
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if got := string(resp.GetStdout()); got != "out\ninherited\n/tmp\n" {
		t.Errorf("stdout = %q, want out, the container's env and cwd", got)
	}
	if got := string(resp.GetStderr()); got != "err\n" {
		t.Errorf("stderr = %q, want err", got)
	}
	if resp.GetExitCode() != 3 {
		t.Errorf("exit code = %d, want 3", resp.GetExitCode())
	}

	// Output beyond what fits in one CRI answer is dropped, not an error.
	resp, err = d.execSync(id, 30, "sh", "-c", "head -c 17000000 /dev/zero")
	if err != nil {
		t.Fatalf("ExecSync of 17 MB: %v", err)
	}
	if len(resp.GetStdout()) != pod.MaxExecOutput || resp.GetExitCode() != 0 {
		t.Errorf("17 MB of output: kept %d bytes, exit %d; want %d, 0", len(resp.GetStdout()), resp.GetExitCode(), pod.MaxExecOutput)
	}

	wantCode(t, "ExecSync of an unknown container", func() error {
		_, err := d.execSync("nosuchcontainer", 0, "true")
		return err
	}(), codes.NotFound)
	stopped := d.run(podID, podCfg, containerConfig("done", "true"))
	d.waitExited(stopped, 10*time.Second)
	wantCode(t, "ExecSync of an exited container", func() error {
		_, err := d.execSync(stopped, 0, "true")
		return err
	}(), codes.FailedPrecondition)
	d.stopAndRemovePod(podID)
}

// TestExecSyncTimeoutKillsProcessTree is containerd#9568: a timed-out exec
// whose children keep its output open must return promptly and leave no
// process behind.
func TestExecSyncTimeoutKillsProcessTree(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "exectimeout")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, sleeper("sleeper"))
	initPid := d.containerPid(id)

	started := time.Now()
	_, err := d.execSync(id, 1, "sh", "-c", "sleep 100 & sleep 100")
	elapsed := time.Since(started)
	wantCode(t, "ExecSync past its timeout", err, codes.DeadlineExceeded)
	if elapsed > 5*time.Second {
		t.Errorf("ExecSync with a 1 s timeout took %v", elapsed)
	}
	if !eventually(5*time.Second, func() bool { return len(othersInPidNamespace(initPid)) == 0 }) {
		t.Errorf("processes left in the container after the timed-out exec: %v", othersInPidNamespace(initPid))
	}
	resp, err := d.execSync(id, 5, "echo", "still works")
	if err != nil || string(resp.GetStdout()) != "still works\n" {
		t.Errorf("ExecSync after a timeout: %q, %v", resp.GetStdout(), err)
	}
	d.stopAndRemovePod(podID)
}

// othersInPidNamespace lists, as "pid:comm", the processes that share
// initPid's PID namespace, other than initPid and the pod's berth-pause.
func othersInPidNamespace(initPid int) []string {
	want, err := os.Readlink("/proc/" + strconv.Itoa(initPid) + "/ns/pid")
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == initPid {
			continue
		}
		ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid")
		if err != nil || ns != want {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		if name := strings.TrimSpace(string(comm)); name != "berth-pause" {
			out = append(out, e.Name()+":"+name)
		}
	}
	return out
}
