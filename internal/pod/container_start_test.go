package pod

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// preparedContainer makes a service with a ready pod and one container
// that CreateContainer prepared; the fake's calls start empty.
func preparedContainer(t *testing.T) (*Service, *fakeWorld, string, string) {
	t.Helper()
	s, f, sbID := readyPod(t, oneImage{})
	id, err := s.CreateContainer(context.Background(), sbID, appConfig(), goodSandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	return s, f, sbID, id
}

// TestCreatePreparesAndStartRuns: CreateContainer makes no runc container;
// StartContainer runs it in one `runc run` and records its pid; a stop
// before the start is a no-op that leaves it created, as in containerd.
func TestCreatePreparesAndStartRuns(t *testing.T) {
	s, f, _, id := preparedContainer(t)
	c, err := s.Container(id)
	if err != nil || c.State != ContainerCreated || !c.prepared() {
		t.Fatalf("after CreateContainer: %+v, %v; want created, prepared", c, err)
	}
	if err := s.StopContainer(context.Background(), id, 10); err != nil {
		t.Fatalf("StopContainer of a prepared container: %v", err)
	}
	if ops := f.log(false); len(ops) != 0 {
		t.Errorf("StopContainer of a prepared container called %v, want nothing", ops)
	}
	if err := s.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if ops := f.log(true); !slices.Equal(ops, []string{"run"}) {
		t.Errorf("StartContainer called %v, want one run", ops)
	}
	c, _ = s.Container(id)
	if c.State != ContainerRunning || c.Pid != fakeInitPid || c.StartedAt.IsZero() {
		t.Errorf("after StartContainer: state %s, pid %d, started at %v", c.State, c.Pid, c.StartedAt)
	}
}

// TestStartWithAMonitorThatPredatesRun: a monitor that only creates is
// then asked to start.
func TestStartWithAMonitorThatPredatesRun(t *testing.T) {
	s, f, _, id := preparedContainer(t)
	f.oldMonitor = true
	if err := s.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if ops := f.log(true); !slices.Equal(ops, []string{"run", "start"}) {
		t.Errorf("StartContainer called %v, want run then start", ops)
	}
	if c, _ := s.Container(id); c.State != ContainerRunning || c.Pid != fakeInitPid {
		t.Errorf("state %s, pid %d", c.State, c.Pid)
	}
}

// TestStartFailureIsAStartError: a run that fails leaves nothing in runc
// or the monitor, and the container exited 128, reason StartError, with
// the error as its message; a second start is refused.
func TestStartFailureIsAStartError(t *testing.T) {
	s, f, _, id := preparedContainer(t)
	f.fail["run"] = errors.New(`exec: "/no/such/bin": stat /no/such/bin: no such file or directory`)
	err := s.StartContainer(context.Background(), id)
	if err == nil || !strings.Contains(err.Error(), "runc run: exec") || !strings.HasPrefix(err.Error(), "container "+id) {
		t.Fatalf("StartContainer = %v; want the run's error naming the container", err)
	}
	if ops := f.log(true); !slices.Equal(ops, []string{"run", "forget", "kill", "delete"}) {
		t.Errorf("calls %v, want run, then forget, kill, delete", ops)
	}
	c, _ := s.Container(id)
	if c.State != ContainerExited || c.ExitCode != 128 || c.Reason != ReasonStartError || !strings.Contains(c.Message, "/no/such/bin") {
		t.Errorf("after a failed start: state %s, exit %d, reason %s, message %q", c.State, c.ExitCode, c.Reason, c.Message)
	}
	if err := s.StartContainer(context.Background(), id); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("second StartContainer = %v, want FailedPrecondition", err)
	}
}

// TestStartInAStoppedSandboxIsRefused: a prepared container does not run
// in a sandbox that is no longer ready (its network is gone).
func TestStartInAStoppedSandboxIsRefused(t *testing.T) {
	s, f, sbID, id := preparedContainer(t)
	if err := s.StopSandbox(context.Background(), sbID); err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	if err := s.StartContainer(context.Background(), id); !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("StartContainer in a stopped sandbox = %v, want FailedPrecondition", err)
	}
	if ops := f.log(true); slices.Contains(ops, "run") {
		t.Errorf("calls %v: a run in a stopped sandbox", ops)
	}
}

// TestUpdateResourcesOfAPreparedContainer: the new limits go into the
// bundle's spec (runc has no container to update), the device rules stay.
func TestUpdateResourcesOfAPreparedContainer(t *testing.T) {
	s, f, _, id := preparedContainer(t)
	c, _ := s.Container(id)
	path := filepath.Join(c.Bundle, "config.json")
	before := readSpec(t, path)
	if before.Linux == nil || before.Linux.Resources == nil || len(before.Linux.Resources.Devices) == 0 {
		t.Fatalf("spec without device rules: %+v", before.Linux)
	}
	res := &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20, CpuShares: 512}
	if err := s.UpdateContainerResources(context.Background(), id, res); err != nil {
		t.Fatal(err)
	}
	if ops := f.log(true); len(ops) != 0 {
		t.Errorf("calls %v: runc update of a container runc does not have", ops)
	}
	after := readSpec(t, path)
	r := after.Linux.Resources
	if r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != 64<<20 || r.CPU == nil || r.CPU.Shares == nil || *r.CPU.Shares != 512 {
		t.Errorf("resources after the update: memory %+v, cpu %+v", r.Memory, r.CPU)
	}
	if len(r.Devices) != len(before.Linux.Resources.Devices) {
		t.Errorf("device rules %d, want %d kept", len(r.Devices), len(before.Linux.Resources.Devices))
	}
	if c, _ := s.Container(id); c.Config.GetLinux().GetResources().GetMemoryLimitInBytes() != 64<<20 {
		t.Errorf("recorded resources %+v", c.Config.GetLinux().GetResources())
	}
}

func readSpec(t *testing.T, path string) specs.Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}
