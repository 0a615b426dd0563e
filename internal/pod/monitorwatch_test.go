package pod

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/runc"
)

// runningPod starts a pod (pid CONTAINER) with one started container on
// the fakes and returns the sandbox and container ids.
func runningPod(t *testing.T, s *Service) (string, string) {
	t.Helper()
	ctx := context.Background()
	s.cfg.Images = oneImage{}
	cfg := goodSandboxConfig()
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
	}}
	sbID, err := s.RunSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateContainer(ctx, sbID, appConfig(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sbID, id
}

// TestMonitorDeathIsTakenOver: when a pod's monitor dies, a new monitor is
// launched and the sandbox record names it; a container whose process
// lives is adopted by it and stays running; one whose process is gone is
// exited with reason Unknown at once, never left running.
func TestMonitorDeathIsTakenOver(t *testing.T) {
	for _, alive := range []bool{true, false} {
		f := newFakeWorld()
		s := newFakeService(t, t.TempDir(), t.TempDir(), f)
		sbID, id := runningPod(t, s)
		if alive {
			f.states[id] = runc.State{ID: id, Pid: fakeInitPid, Status: "running"}
		}
		f.killMonitor(t, s.monitorSocket(sbID))
		sb := s.sandboxes[sbID].snapshot()
		if sb.MonitorPid != fakeMonitorPid+1 || len(f.launches) != 2 {
			t.Errorf("alive=%v: monitor pid %d after %d launches, want the new monitor's", alive, sb.MonitorPid, len(f.launches))
		}
		c := s.containers[id].snapshot()
		adopted := slices.Contains(f.log(false), "adopt "+short(id))
		switch {
		case alive && (c.State != ContainerRunning || !adopted):
			t.Errorf("live container: state %s, adopted %v; want running and adopted", c.State, adopted)
		case !alive && (c.State != ContainerExited || c.ExitCode != 255 || c.Reason != ReasonUnknown || c.Message == "" || adopted):
			t.Errorf("gone container: %s %d %q %q adopted %v; want exited 255 Unknown with a message, not adopted",
				c.State, c.ExitCode, c.Reason, c.Message, adopted)
		}
	}
}

// TestMonitorDeathAdoptRefusedIsAnExit: a process that ends between runc
// state and the adoption (the new monitor finds no pid) is an exit.
func TestMonitorDeathAdoptRefusedIsAnExit(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	sbID, id := runningPod(t, s)
	f.states[id] = runc.State{ID: id, Pid: fakeInitPid, Status: "running"}
	f.fail["adopt"] = errdefs.ErrNotFound
	f.killMonitor(t, s.monitorSocket(sbID))
	if c := s.containers[id].snapshot(); c.State != ContainerExited || c.Reason != ReasonUnknown {
		t.Errorf("container %s %q, want exited Unknown", c.State, c.Reason)
	}
}

// TestMonitorDeathWithoutANewMonitorMakesThePodNotReady: when no new
// monitor starts, the pod turns not ready (kubelet recreates it) and its
// containers are not called exited while they may run.
func TestMonitorDeathWithoutANewMonitorMakesThePodNotReady(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	sbID, id := runningPod(t, s)
	f.fail["launch"] = errors.New("injected")
	f.killMonitor(t, s.monitorSocket(sbID))
	if st := s.sandboxes[sbID].snapshot().State; st != SandboxNotReady {
		t.Errorf("sandbox %s, want notready", st)
	}
	if st := s.containers[id].snapshot().State; st != ContainerRunning {
		t.Errorf("container %s, want still running", st)
	}
}

// TestMonitorStoppedByRemovalIsNotTakenOver: the monitor a removal stops
// is not replaced.
func TestMonitorStoppedByRemovalIsNotTakenOver(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	sbID, id := runningPod(t, s)
	socket := s.monitorSocket(sbID)
	writeExit(t, s, id, 0, time.Now()) // the container ended: remove deletes it without a wait
	if err := s.RemoveSandbox(context.Background(), sbID); err != nil {
		t.Fatal(err)
	}
	f.killMonitor(t, socket)
	if len(f.launches) != 1 {
		t.Errorf("%d monitor launches, want only the pod's first", len(f.launches))
	}
}

// TestMonitorThatDiesAtOnceIsNotRelaunchedForever: when the new monitor is
// gone already, no third is launched and the pod turns not ready.
func TestMonitorThatDiesAtOnceIsNotRelaunchedForever(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	sbID, _ := runningPod(t, s)
	f.gone[fakeMonitorPid+1] = true
	f.killMonitor(t, s.monitorSocket(sbID))
	if len(f.launches) != 2 {
		t.Errorf("%d monitor launches, want the pod's first and one replacement", len(f.launches))
	}
	if st := s.sandboxes[sbID].snapshot().State; st != SandboxNotReady {
		t.Errorf("sandbox %s, want notready", st)
	}
}
