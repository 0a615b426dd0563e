package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// killWait bounds how long a container may take to be reaped after SIGKILL.
const killWait = 10 * time.Second

// StopContainer stops a running container: its stop signal, then SIGKILL
// after timeout seconds. Idempotent: an unknown or stopped container is not
// an error (api.proto: "must not return an error if the container has already
// been stopped").
func (s *Service) StopContainer(ctx context.Context, id string, timeout int64) error {
	e, unlock, err := s.lockContainerIfKnown(id)
	if e == nil {
		return err
	}
	defer unlock()
	return s.stopContainerEntry(ctx, e, timeout)
}

// lockContainerIfKnown finds a container for an idempotent call and takes
// its op lock. It returns a nil entry and no error when the container is
// unknown or was removed while the caller waited for the lock.
func (s *Service) lockContainerIfKnown(id string) (*containerEntry, func(), error) {
	e, err := s.findContainer(id)
	if errdefs.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	e.op.Lock()
	if !s.containerKnown(e) {
		e.op.Unlock()
		return nil, nil, nil
	}
	return e, e.op.Unlock, nil
}

func (s *Service) stopContainerEntry(ctx context.Context, e *containerEntry, timeout int64) error {
	s.refreshExit(e)
	rec := e.snapshot()
	if rec.State != ContainerRunning && rec.State != ContainerCreated || rec.prepared() {
		return nil // a prepared container has no process: it stays created, as in containerd
	}
	shared := s.sharesPIDNamespace(rec.SandboxID)
	rt := s.runtimeFor(rec.RuntimeHandler)
	if timeout > 0 && rec.State == ContainerRunning {
		sig := s.stopSignal(&rec)
		if err := rt.Kill(ctx, rec.ID, sig, shared); err != nil && !isGone(err) {
			return fmt.Errorf("container %s: signal %d: %w", rec.ID, sig, err)
		}
		if exited, err := s.waitExit(ctx, e, time.Duration(timeout)*time.Second); exited || err != nil {
			return err
		}
	}
	if err := rt.Kill(ctx, rec.ID, syscall.SIGKILL, shared); err != nil && !isGone(err) {
		return fmt.Errorf("container %s: SIGKILL: %w", rec.ID, err)
	}
	if exited, err := s.waitExit(ctx, e, killWait); exited || err != nil {
		return err
	}
	return s.exitWithoutMonitor(ctx, e)
}

// exitWithoutMonitor records an exit that no monitor reported (the monitor
// died) once runc confirms that the container is gone or stopped; its exit
// code is unknown then.
func (s *Service) exitWithoutMonitor(ctx context.Context, e *containerEntry) error {
	rec := e.snapshot()
	id := rec.ID
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	st, err := s.runtimeFor(rec.RuntimeHandler).State(sctx, id)
	switch {
	case err != nil && !errdefs.IsNotFound(err):
		return fmt.Errorf("container %s: state after SIGKILL: %w", id, err)
	case err == nil && st.Status != "stopped":
		return fmt.Errorf("container %s: still %s after SIGKILL: %w", id, st.Status, errdefs.ErrUnavailable)
	}
	s.applyExit(e, &monitor.ExitRecord{ID: id, ExitCode: 137, Signal: int(syscall.SIGKILL), FinishedAt: time.Now()}, ReasonUnknown)
	return nil
}

// RemoveContainer kills the container if needed and removes it with its
// rootfs and bundle. Idempotent: an unknown container is not an error.
func (s *Service) RemoveContainer(ctx context.Context, id string) error {
	e, unlock, err := s.lockContainerIfKnown(id)
	if e == nil {
		return err
	}
	defer unlock()
	return s.removeContainerEntry(ctx, e)
}

func (s *Service) removeContainerEntry(ctx context.Context, e *containerEntry) error {
	if !s.containerKnown(e) {
		return nil // a concurrent remove finished first
	}
	if err := s.stopContainerEntry(ctx, e, 0); err != nil {
		return err
	}
	if err := s.updateContainer(e, func(c *Container) bool { c.State = ContainerRemoving; return true }); err != nil {
		return err
	}
	rec := e.snapshot()
	if err := s.cleanUpContainer(ctx, &rec); err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	s.mu.Lock()
	delete(s.containers, rec.ID)
	s.mu.Unlock()
	s.containerIDs.Delete(rec.ID)
	s.containerNames.ReleaseByKey(rec.ID)
	s.containerDeleted(rec)
	return nil
}

// cleanUpContainer removes everything a container may hold; every step is
// idempotent so that recovery can finish a half-made or half-removed one.
func (s *Service) cleanUpContainer(ctx context.Context, rec *Container) error {
	s.outputs.release(rec.ID)
	rt := s.runtimeFor(rec.RuntimeHandler)
	if rec.FinishedAt.IsZero() { // may still run
		if err := s.killAndDelete(ctx, rt, rec.ID, rec.CgroupPath, false); err != nil {
			return err
		}
	} else if err := s.runcDelete(ctx, rt, rec.ID, rec.CgroupPath); err != nil {
		return err
	}
	if sb, err := s.findSandbox(rec.SandboxID); err == nil {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = s.calls.Forget(fctx, sb.snapshot().MonitorSocket, rec.ID)
		cancel()
	}
	if err := os.Remove(filepath.Join(s.exitsDir(), rec.ID+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("exit file: %w", err)
	}
	if err := s.host.UnmountRootfs(filepath.Join(s.bundlesDir(), rec.ID, "rootfs")); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if s.inUsernsDir(rec.Rootfs) {
		if err := s.host.UnmountRootfs(rec.Rootfs); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := removeEmptyDir(rec.Rootfs); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	dir := filepath.Join(s.containersDir(), rec.ID)
	if err := s.unmountImageVolumes(dir); err != nil {
		return err
	}
	if err := releaseIDMapScratch(dir); err != nil {
		return err
	}
	// Everything else first, the record last: a crash in between leaves a
	// record that recovery finishes.
	for _, path := range []string{filepath.Join(s.bundlesDir(), rec.ID), filepath.Join(dir, "upper"), filepath.Join(dir, "work"), dir} {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("directory %s: %w", path, err)
		}
	}
	return nil
}

// killAndDelete force-deletes a runc container of runtime rt and what is
// left of its cgroup (cgroupsPath, "" when unknown); a missing one is fine.
func (s *Service) killAndDelete(ctx context.Context, rt containerRuntime, id, cgroupsPath string, all bool) error {
	if err := rt.Kill(ctx, id, syscall.SIGKILL, all); err != nil && !isGone(err) {
		s.log.Debug("runc kill", "id", id, "error", err)
	}
	return s.runcDelete(ctx, rt, id, cgroupsPath)
}

// waitExit waits up to d for the container's exit to be recorded; it
// returns the context's error if the caller gives up first.
func (s *Service) waitExit(ctx context.Context, e *containerEntry, d time.Duration) (bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-e.exited:
			return true, nil
		case <-tick.C:
			s.refreshExit(e) // belt and braces next to the inotify watcher
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("container %s: waiting for exit: %w", e.snapshot().ID, ctx.Err())
		}
	}
}

func (s *Service) sharesPIDNamespace(sandboxID string) bool {
	sb, err := s.findSandbox(sandboxID)
	return err == nil && sb.snapshot().PausePid != 0
}

// isGone reports a runc error about a container that no longer exists or no
// longer runs.
func isGone(err error) bool {
	if errdefs.IsNotFound(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "does not exist") || strings.Contains(msg, "not running") ||
		strings.Contains(msg, "process already finished") || strings.Contains(msg, "no such process")
}

// containerKnown reports whether e is still the live entry of its container.
func (s *Service) containerKnown(e *containerEntry) bool {
	id := e.snapshot().ID
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.containers[id] == e
}

// ReopenContainerLog makes the monitor reopen a running container's log
// file, after kubelet rotated it (renamed the old one away).
func (s *Service) ReopenContainerLog(ctx context.Context, id string) error {
	e, err := s.findContainer(id)
	if err != nil {
		return err
	}
	s.refreshExit(e)
	rec := e.snapshot()
	if rec.State != ContainerRunning {
		return fmt.Errorf("container %s is %s, not running: %w", rec.ID, rec.State, errdefs.ErrFailedPrecondition)
	}
	sb, err := s.findSandbox(rec.SandboxID)
	if err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	if err := s.calls.ReopenLog(ctx, sb.snapshot().MonitorSocket, rec.ID); err != nil {
		return fmt.Errorf("container %s: reopen log: %w", rec.ID, err)
	}
	return nil
}
