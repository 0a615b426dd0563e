package pod

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// startTimeout bounds runc start (or run) through the monitor.
const startTimeout = time.Minute

// startErrorExitCode is, with ReasonStartError, the exit a container gets
// when StartContainer cannot run it (containerd reports the same): kubelet
// applies the restart policy to it as to any exit.
const startErrorExitCode = 128

// StartContainer starts a created container: a prepared one (the default:
// CreateContainer made no runc container) in one `runc run --detach`
// through the pod's monitor, one that runc created with `runc start`.
func (s *Service) StartContainer(ctx context.Context, id string) error {
	e, err := s.findContainer(id)
	if err != nil {
		return err
	}
	sbEntry, err := s.findSandbox(e.snapshot().SandboxID)
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	// The sandbox stays ready while its container starts: a concurrent
	// stop waits (the sandbox's lock before the container's, as there).
	sbEntry.op.RLock()
	defer sbEntry.op.RUnlock()
	e.op.Lock()
	defer e.op.Unlock()
	rec := e.snapshot()
	if rec.State != ContainerCreated {
		return fmt.Errorf("container %s is %s, not created: %w", rec.ID, rec.State, errdefs.ErrFailedPrecondition)
	}
	sb := sbEntry.snapshot()
	if rec.prepared() && (sb.State != SandboxReady || !s.sandboxKnown(sbEntry)) {
		return fmt.Errorf("container %s: pod sandbox %s is %s, not ready: %w", rec.ID, sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	defer s.containerStarting(e)()
	now := time.Now() // before the start: a fast exit must not finish before it started
	// Once asked, the monitor starts the container even if this request is
	// cancelled: wait for its answer so that the record says so.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	pid := rec.Pid
	if rec.prepared() {
		if pid, err = s.runcRun(sctx, &rec, &sb); err != nil {
			s.startFailed(sctx, e, sb.MonitorSocket, err)
			return fmt.Errorf("container %s: %w", rec.ID, err)
		}
	} else if err := s.runcStart(sctx, rec.ID, sb.MonitorSocket); err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	return s.updateContainer(e, func(c *Container) bool {
		c.Pid, c.StartedAt = pid, now
		if c.State == ContainerCreated { // the exit watcher may have been faster
			c.State = ContainerRunning
		}
		return true
	})
}

// runcStart asks the pod's monitor to `runc start` a created container.
func (s *Service) runcStart(ctx context.Context, id, monitorSocket string) error {
	defer s.phase(opStartContainer, "runc_start")()
	if err := s.calls.Start(ctx, monitorSocket, id); err != nil {
		return fmt.Errorf("runc start: %w", err)
	}
	return nil
}

// runcRun asks the pod's monitor to create and start a prepared container
// in one `runc run --detach` (a monitor older than that creates it only,
// and is then asked to start it), and holds its output FIFOs.
func (s *Service) runcRun(ctx context.Context, rec *Container, sb *Sandbox) (int, error) {
	defer s.phase(opStartContainer, "runc_run")()
	cfg := rec.Config
	pid, started, err := s.calls.Run(ctx, sb.MonitorSocket, monitor.CreateRequest{
		ID: rec.ID, Bundle: rec.Bundle, LogPath: rec.LogPath,
		LogDirectory: logDirectory(rec, sb), LogRelPath: logRelPath(rec, sb),
		Stdin: cfg.GetStdin(), StdinOnce: cfg.GetStdinOnce(), Terminal: cfg.GetTty(),
		CgroupPath: rec.CgroupPath, SystemdCgroup: cgrouppath.IsSystemd(rec.CgroupPath),
	})
	if err != nil {
		return 0, fmt.Errorf("runc run: %w", err)
	}
	if !started {
		if err := s.calls.Start(ctx, sb.MonitorSocket, rec.ID); err != nil {
			return 0, fmt.Errorf("runc start: %w", err)
		}
	}
	if err := s.outputs.hold(rec.ID, rec.Bundle); err != nil {
		// The container runs all the same; it would only not outlive
		// its monitor.
		s.log.Warn("container output: not held for a monitor takeover", "id", rec.ID, "error", err)
	}
	return pid, nil
}

// startFailed undoes what a failed run may have left in runc and the
// monitor, and records the exit kubelet expects of a container that could
// not start (StartError, 128, the error as message), as containerd does.
func (s *Service) startFailed(ctx context.Context, e *containerEntry, monitorSocket string, cause error) {
	rec := e.snapshot()
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_ = s.calls.Forget(fctx, monitorSocket, rec.ID)
	cancel()
	if err := s.killAndDelete(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, rec.CgroupPath, false); err != nil {
		s.log.Warn("container: cleanup after a failed start", "id", rec.ID, "error", err)
	}
	s.recordExit(e, &monitor.ExitRecord{ID: rec.ID, ExitCode: startErrorExitCode, FinishedAt: time.Now()},
		ReasonStartError, cause.Error())
}
