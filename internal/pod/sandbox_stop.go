package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/network"
)

// StopSandbox kills every container of the sandbox, stops berth-pause and
// releases the pod's network (CNI DEL, then the netns pin). It is idempotent: an
// unknown or already stopped sandbox is not an error (api.proto: "must not
// return an error if all relevant resources have already been reclaimed").
// A sandbox a quarantined container names is refused (FailedPrecondition).
func (s *Service) StopSandbox(ctx context.Context, id string) error {
	e, unlock, err := s.lockSandboxIfKnown(id)
	if e == nil {
		return err
	}
	defer unlock()
	if err := s.refuseIfQuarantinedUsers(e.snapshot().ID); err != nil {
		return err
	}
	return s.stopSandboxLocked(ctx, e)
}

// lockSandboxIfKnown finds a sandbox for an idempotent call and takes its op
// lock. It returns a nil entry and no error when the sandbox is unknown or
// was removed while the caller waited for the lock.
func (s *Service) lockSandboxIfKnown(id string) (*sandboxEntry, func(), error) {
	e, err := s.findSandbox(id)
	if errdefs.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	e.op.Lock()
	if !s.sandboxKnown(e) {
		e.op.Unlock()
		return nil, nil, nil
	}
	return e, e.op.Unlock, nil
}

// sandboxKnown reports whether e is still the live entry of its sandbox.
func (s *Service) sandboxKnown(e *sandboxEntry) bool {
	id := e.snapshot().ID
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.sandboxes[id] == e
}

func (s *Service) stopSandboxLocked(ctx context.Context, e *sandboxEntry) error {
	defer s.sandboxMaybeStopped(e)
	e.stopping.Store(true)
	rec := e.snapshot()
	for _, c := range s.containersOf(rec.ID) {
		c.op.Lock()
		err := s.stopContainerEntry(ctx, c, 0)
		c.op.Unlock()
		if err != nil {
			return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
		}
	}
	if err := s.deletePause(ctx, &rec); err != nil {
		return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
	}
	if !rec.HostNetwork && !rec.NetworkDown {
		if err := s.teardownNetwork(ctx, attachment(&rec)); err != nil {
			return fmt.Errorf("pod sandbox %s: network: %w", rec.ID, err)
		}
		// As containerd does: the network namespace goes at stop, with
		// what the kernel still holds of the pod's network.
		if err := s.host.UnpinOne(rec.NetNS); err != nil {
			return fmt.Errorf("pod sandbox %s: network namespace: %w", rec.ID, err)
		}
	}
	s.userns.release(rec.ID) // nothing runs in its user namespace any more
	if rec.State == SandboxNotReady && rec.PausePid == 0 && (rec.NetworkDown || rec.HostNetwork) {
		return nil
	}
	return s.updateSandbox(e, func(r *Sandbox) bool { r.State = SandboxNotReady; r.PausePid = 0; r.NetworkDown = true; return true })
}

// RemoveSandbox stops the sandbox, removes its containers and every resource
// it holds, then forgets it. Idempotent: an unknown sandbox is not an error.
func (s *Service) RemoveSandbox(ctx context.Context, id string) error {
	e, unlock, err := s.lockSandboxIfKnown(id)
	if e == nil {
		return err
	}
	defer unlock()
	if err := s.refuseIfQuarantinedUsers(e.snapshot().ID); err != nil {
		return err
	}
	if err := s.stopSandboxLocked(ctx, e); err != nil {
		return err
	}
	rec := e.snapshot()
	for _, c := range s.containersOf(rec.ID) {
		c.op.Lock()
		err := s.removeContainerEntry(ctx, c)
		c.op.Unlock()
		if err != nil {
			return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
		}
	}
	if err := s.updateSandbox(e, func(r *Sandbox) bool { r.State = SandboxRemoving; return true }); err != nil {
		return err
	}
	if err := s.cleanUpSandbox(ctx, &rec); err != nil {
		return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
	}
	s.forgetSandbox(&rec)
	s.sandboxDeleted(rec)
	s.log.Info("pod sandbox removed", "id", rec.ID, "name", rec.Name)
	return nil
}

// cleanUpSandbox releases everything a sandbox may hold. Every step is
// idempotent, so recovery can run it on a half-made or half-removed sandbox.
func (s *Service) cleanUpSandbox(ctx context.Context, rec *Sandbox) error {
	if err := s.deletePause(ctx, rec); err != nil {
		return err
	}
	if !rec.HostNetwork && !rec.NetworkDown {
		a := attachment(rec)
		if !s.host.IsPinned(a.NetnsPath) {
			a.NetnsPath = ""
		}
		if err := s.teardownNetwork(ctx, a); err != nil {
			return fmt.Errorf("network: %w", err)
		}
	}
	s.watches.drop(rec.ID) // its end is no news now
	if err := s.monitors.Stop(ctx, s.monitorSocket(rec.ID), rec.MonitorPid); err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	if err := s.host.UnpinNamespaces(filepath.Join(s.podDir(rec.ID), "ns")); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	for _, dir := range []string{s.podDir(rec.ID), filepath.Join(s.bundlesDir(), rec.ID)} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("directory %s: %w", dir, err)
		}
	}
	// Its containers are gone: what is left in its rootfs directory
	// (berth-pause's, when a crash came between it and its bundle; a
	// mount point a failed create left) goes, if it unmounts.
	if err := s.cleanUsernsPodDir(rec.ID, nil); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(s.exitsDir(), rec.ID+".json"))
	s.removeEmptyDefaultCgroup()
	return os.RemoveAll(filepath.Dir(s.sandboxRecordPath(rec.ID)))
}

// teardownNetwork runs CNI DEL for a sandbox. A DEL that fails for a pod
// set up before the host's last boot (network.ErrBeforeBoot: the reboot
// took the kernel state a plugin failed to delete) is logged and taken as
// done: it would fail forever, and the pod could never be removed.
func (s *Service) teardownNetwork(ctx context.Context, a network.Attachment) error {
	err := s.cfg.Network.Teardown(ctx, a)
	if errors.Is(err, network.ErrBeforeBoot) {
		s.log.Warn("network teardown after a reboot: a plugin failed on state the reboot removed; taken as done", "id", a.PodID, "error", err)
		return nil
	}
	return err
}

// forgetSandbox drops a removed sandbox from memory and releases its name.
func (s *Service) forgetSandbox(rec *Sandbox) {
	s.mu.Lock()
	delete(s.sandboxes, rec.ID)
	s.mu.Unlock()
	s.userns.release(rec.ID)
	s.watches.drop(rec.ID)
	s.sandboxIDs.Delete(rec.ID)
	s.sandboxNames.ReleaseByKey(rec.ID)
}

// deletePause removes a sandbox's berth-pause container and its bundle. The
// bundle exists exactly while the container may: a pod without a shared PID
// namespace, or one already stopped, costs no runc call.
func (s *Service) deletePause(ctx context.Context, rec *Sandbox) error {
	bundle := filepath.Join(s.bundlesDir(), rec.ID)
	if _, err := os.Stat(bundle); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := s.killAndDelete(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, bundleCgroupsPath(bundle), true); err != nil {
		return fmt.Errorf("berth-pause: %w", err)
	}
	if err := s.removePauseRootfs(rec); err != nil {
		return fmt.Errorf("berth-pause: %w", err)
	}
	if err := os.RemoveAll(bundle); err != nil {
		return fmt.Errorf("berth-pause: bundle: %w", err)
	}
	return nil
}
