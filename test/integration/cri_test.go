package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// podConfig is a minimal sandbox config as kubelet would send it.
func podConfig(t *testing.T, name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: name, Namespace: "default", Uid: harness.RandomHex(16), Attempt: 0,
		},
		Hostname:     name,
		LogDirectory: t.TempDir(),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
}

// containerConfig runs cmd in the busybox image, logging to <name>.log.
func containerConfig(name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  cmd,
		LogPath:  name + ".log",
	}
}

// shell is containerConfig running `sh -c script`.
func shell(name, script string) *runtimeapi.ContainerConfig {
	return containerConfig(name, "sh", "-c", script)
}

// runPod runs a sandbox and returns its id.
func (d *daemon) runPod(cfg *runtimeapi.PodSandboxConfig) string {
	d.T.Helper()
	resp, err := d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		d.T.Fatalf("RunPodSandbox %s: %v", cfg.GetMetadata().GetName(), err)
	}
	d.KnownIDs[resp.GetPodSandboxId()] = true
	return resp.GetPodSandboxId()
}

// create creates a container and returns its id.
func (d *daemon) create(podID string, podCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	d.T.Helper()
	resp, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, Config: cfg, SandboxConfig: podCfg,
	})
	if err != nil {
		d.T.Fatalf("CreateContainer %s: %v", cfg.GetMetadata().GetName(), err)
	}
	d.KnownIDs[resp.GetContainerId()] = true
	return resp.GetContainerId()
}

// start starts a created container.
func (d *daemon) startContainer(id string) {
	d.T.Helper()
	if _, err := d.RT.StartContainer(d.ctx(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		d.T.Fatalf("StartContainer %s: %v", id, err)
	}
}

// run creates and starts a container.
func (d *daemon) run(podID string, podCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	d.T.Helper()
	id := d.create(podID, podCfg, cfg)
	d.startContainer(id)
	return id
}

func (d *daemon) containerStatus(id string) *runtimeapi.ContainerStatus {
	d.T.Helper()
	resp, err := d.RT.ContainerStatus(d.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		d.T.Fatalf("ContainerStatus %s: %v", id, err)
	}
	return resp.GetStatus()
}

func (d *daemon) sandboxStatus(id string) *runtimeapi.PodSandboxStatus {
	d.T.Helper()
	resp, err := d.RT.PodSandboxStatus(d.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		d.T.Fatalf("PodSandboxStatus %s: %v", id, err)
	}
	return resp.GetStatus()
}

// containerPid reads the container's pid from the verbose status.
func (d *daemon) containerPid(id string) int {
	d.T.Helper()
	resp, err := d.RT.ContainerStatus(d.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		d.T.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		d.T.Fatalf("ContainerStatus %s verbose info: no pid (%v): %q", id, err, resp.GetInfo())
	}
	return info.Pid
}

// waitExited polls ContainerStatus until the container is EXITED.
func (d *daemon) waitExited(id string, timeout time.Duration) *runtimeapi.ContainerStatus {
	d.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := d.containerStatus(id)
		if st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return st
		}
		if time.Now().After(deadline) {
			d.T.Fatalf("container %s is %v after %v, want EXITED", id, st.GetState(), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopAndRemovePod stops and removes a sandbox, failing the test on error.
func (d *daemon) stopAndRemovePod(id string) {
	d.T.Helper()
	if _, err := d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		d.T.Fatalf("StopPodSandbox %s: %v", id, err)
	}
	if _, err := d.RT.RemovePodSandbox(d.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		d.T.Fatalf("RemovePodSandbox %s: %v", id, err)
	}
}

// logRecord is one line of a CRI container log.
type logRecord struct {
	Time    time.Time
	Stream  string // stdout or stderr
	Partial bool   // tag P
	Content string
}

// readLog parses a CRI log file: "<RFC3339Nano> <stream> <P|F> <content>".
func readLog(t *testing.T, path string) []logRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("container log: %v", err)
	}
	defer f.Close()
	var out []logRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rec, err := parseLogLine(sc.Text())
		if err != nil {
			t.Fatalf("container log %s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("container log %s: %v", path, err)
	}
	return out
}

func parseLogLine(line string) (logRecord, error) {
	parts := strings.SplitN(line, " ", 4)
	if len(parts) < 3 {
		return logRecord{}, fmt.Errorf("%q: want <time> <stream> <tag> <content>", line)
	}
	ts, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return logRecord{}, fmt.Errorf("%q: time: %v", line, err)
	}
	if parts[1] != "stdout" && parts[1] != "stderr" {
		return logRecord{}, fmt.Errorf("%q: stream %q", line, parts[1])
	}
	if parts[2] != "P" && parts[2] != "F" {
		return logRecord{}, fmt.Errorf("%q: tag %q", line, parts[2])
	}
	rec := logRecord{Time: ts, Stream: parts[1], Partial: parts[2] == "P"}
	if len(parts) == 4 {
		rec.Content = parts[3]
	}
	return rec, nil
}

// logPath is where a container of the pod logs.
func logPath(podCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	return filepath.Join(podCfg.GetLogDirectory(), cfg.GetLogPath())
}

// wantCode fails unless err is a gRPC status with code want; it returns the
// message.
func wantCode(t *testing.T, what string, err error, want codes.Code) string {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %v", what, want)
		return ""
	}
	st, _ := status.FromError(err)
	if st.Code() != want {
		t.Errorf("%s: %v, want code %v", what, err, want)
	}
	return st.Message()
}

// eventually polls cond until it holds or the timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseIP parses an address; an invalid one yields nil, which no subnet contains.
func parseIP(s string) net.IP { return net.ParseIP(s) }
