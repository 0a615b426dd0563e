package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// Recover rebuilds the in-memory view from the durable records after a
// daemon start. Assumptions:
//   - a record is written before the side effects it describes, so a record in
//     "creating" or "removing" may have half-made side effects: they are undone
//     and the record deleted;
//   - the state dir is volatile: a sandbox whose namespace pins are gone was
//     lost to a reboot and is not ready; its containers are exited;
//   - monitors outlive the daemon and write exit files into one directory, so
//     an exit that happened while the daemon was down is found there;
//   - a record that cannot be used (unreadable, of an unknown version, fields
//     that fail their checks) is quarantined with everything that depends on
//     it: renamed aside, logged, reported, never acted on; it never stops
//     recovery.
//
// Recover must finish before the server answers requests.
func (s *Service) Recover(ctx context.Context) error {
	started := time.Now()
	if err := s.watchExits(); err != nil {
		return fmt.Errorf("recovery: exit watcher: %w", err)
	}
	sandboxes := s.loadSandboxes(ctx)
	containers := s.loadContainers(ctx)
	s.removeOrphanDirs(ctx)
	for _, e := range s.allContainers() {
		s.refreshExit(e) // exits written while recovery ran
	}
	s.watchRecoveredMonitors()
	s.log.Info("recovery done", "sandboxes", sandboxes, "containers", containers, "duration", time.Since(started))
	return nil
}

// watchRecoveredMonitors watches the monitor of every sandbox that names
// one: a monitor that died while the daemon was down is taken over now,
// before the daemon answers (monitorDied), one that dies later at once.
func (s *Service) watchRecoveredMonitors() {
	for _, sb := range s.Sandboxes() {
		if sb.MonitorPid != 0 && s.watchMonitor(sb.ID, sb.MonitorPid, sb.MonitorSocket) {
			s.monitorDied(sb.ID, sb.MonitorPid)
		}
	}
}

// recordIDs lists the ids that have a record directory under dir.
func recordIDs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

func (s *Service) loadSandboxes(ctx context.Context) int {
	n := 0
	for _, id := range recordIDs(s.sandboxesDir()) {
		var rec Sandbox
		path := s.sandboxRecordPath(id)
		if err := readSandboxRecord(path, id, &rec); err != nil {
			if !s.quarantineRecord(KindSandbox, id, path, err) {
				s.log.Error("recovery: sandbox directory without record skipped", "id", id, "error", err)
			}
			continue
		}
		s.clearQuarantineNote(filepath.Dir(path))
		if rec.State == SandboxCreating || rec.State == SandboxRemoving {
			s.log.Info("recovery: removing half-made sandbox", "id", id, "state", rec.State)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			s.host.WaitForPlugins(wctx, rec.ID)
			cancel()
			if err := s.cleanUpSandbox(ctx, &rec); err != nil {
				s.log.Error("recovery: sandbox cleanup", "id", id, "error", err)
			}
			continue
		}
		if rec.State == SandboxReady && s.sandboxLost(ctx, &rec) {
			rec.State = SandboxNotReady
			if err := s.saveSandbox(&rec); err != nil {
				s.log.Error("recovery: sandbox record", "id", id, "error", err)
			}
		}
		if err := s.sandboxNames.Reserve(rec.Name, rec.ID); err != nil {
			s.log.Error("recovery: sandbox name", "id", id, "error", err)
		}
		if m := sandboxUserns(rec.Config); m != nil && rec.State == SandboxReady {
			if err := s.userns.take(rec.ID, rec.Name, *m); err != nil {
				s.log.Error("recovery: user namespace mapping", "id", id, "error", err)
			}
		}
		s.addSandbox(rec)
		n++
	}
	return n
}

// sandboxLost reports a ready sandbox that lost its namespaces or its
// berth-pause (a reboot, or someone killed it). Its network is released.
func (s *Service) sandboxLost(ctx context.Context, rec *Sandbox) bool {
	if !rec.HostNetwork && !s.host.IsPinned(rec.NetNS) {
		s.log.Warn("recovery: sandbox lost its network namespace", "id", rec.ID)
		a := attachment(rec)
		a.NetnsPath = ""
		if err := s.teardownNetwork(ctx, a); err != nil {
			s.log.Warn("recovery: network teardown", "id", rec.ID, "error", err)
		} else {
			rec.NetworkDown = true
		}
		return true
	}
	if rec.PausePid != 0 {
		if _, err := monitor.ReadExitFile(s.exitsDir(), rec.ID); err == nil {
			s.log.Warn("recovery: berth-pause exited while the daemon was down", "id", rec.ID)
			return true
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.monitors.Ping(pctx, s.monitorSocket(rec.ID)); err != nil {
		if !s.monitors.Alive(rec.MonitorPid, rec.MonitorSocket) {
			// Gone: a new monitor takes the pod over once the records
			// are loaded (watchRecoveredMonitors).
			s.log.Warn("recovery: pod monitor gone; a new one takes the pod over", "id", rec.ID)
			return false
		}
		// Alive but silent: a pod whose monitor hangs can neither start
		// containers nor report exits: not ready, so that kubelet
		// recreates it.
		s.log.Error("recovery: pod monitor does not answer; sandbox not ready", "id", rec.ID, "error", err)
		return true
	}
	return false
}

func (s *Service) loadContainers(ctx context.Context) int {
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
		mu    sync.Mutex
		count int
	)
	for _, id := range recordIDs(s.containersDir()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if s.loadContainer(ctx, id) {
				mu.Lock()
				count++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return count
}

// loadContainer restores one container record; it reports whether the
// container was kept. A record that cannot be used is quarantined, and so is
// one whose sandbox is: nothing of theirs is touched.
func (s *Service) loadContainer(ctx context.Context, id string) bool {
	var rec Container
	path := s.containerRecordPath(id)
	if err := readContainerRecord(path, id, &rec); err != nil {
		if s.quarantineRecord(KindContainer, id, path, err) {
			return false
		}
		if validID(id) {
			// Removal deletes the record last: its data went first.
			s.log.Info("recovery: removing container directory without record", "id", id)
			_ = s.host.UnmountRootfs(filepath.Join(s.bundlesDir(), id, "rootfs"))
			_ = os.RemoveAll(filepath.Join(s.bundlesDir(), id))
			if err := s.unmountImageVolumes(filepath.Join(s.containersDir(), id)); err != nil {
				s.log.Error("recovery: container directory without record kept: an image volume stays mounted", "id", id, "error", err)
				return false
			}
			if err := releaseIDMapScratch(filepath.Join(s.containersDir(), id)); err != nil {
				s.log.Error("recovery: container directory without record kept: an idmapped layer stays attached", "id", id, "error", err)
				return false
			}
			_ = os.RemoveAll(filepath.Join(s.containersDir(), id))
			return false
		}
		s.log.Error("recovery: container directory without record skipped", "id", id, "error", err)
		return false
	}
	s.clearQuarantineNote(filepath.Dir(path))
	if s.quarantine.has(KindSandbox, rec.SandboxID) {
		s.holdContainer(path, &rec)
		return false
	}
	_, sbErr := s.findSandbox(rec.SandboxID)
	if rec.State == ContainerCreating || rec.State == ContainerRemoving || sbErr != nil {
		s.log.Info("recovery: removing container", "id", id, "state", rec.State, "sandboxKnown", sbErr == nil)
		if err := s.cleanUpContainer(ctx, &rec); err != nil {
			s.log.Error("recovery: container cleanup", "id", id, "error", err)
		}
		return false
	}
	if rec.State == ContainerCreated || rec.State == ContainerRunning {
		s.reconcileContainer(ctx, &rec)
	}
	if (rec.State == ContainerCreated || rec.State == ContainerRunning) && !rec.prepared() {
		if err := s.outputs.hold(rec.ID, rec.Bundle); err != nil {
			s.log.Warn("recovery: container output not held for a monitor takeover", "id", id, "error", err)
		}
	}
	if err := s.containerNames.Reserve(rec.Name, rec.ID); err != nil {
		s.log.Error("recovery: container name", "id", id, "error", err)
	}
	s.addContainer(rec)
	return true
}

// reconcileContainer settles a created or running record against its exit
// file and runc: an exit without a file (the monitor died, or a reboot) is
// recorded with reason Unknown.
func (s *Service) reconcileContainer(ctx context.Context, rec *Container) {
	if x, err := monitor.ReadExitFile(s.exitsDir(), rec.ID); err == nil {
		rec.State, rec.ExitCode, rec.FinishedAt = ContainerExited, x.ExitCode, x.FinishedAt
		rec.Reason = exitReason(x.ExitCode, x.OOMKilled)
	} else {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := s.runtimeFor(rec.RuntimeHandler).State(sctx, rec.ID)
		cancel()
		if err == nil && (st.Status == "running" || st.Status == "created" || st.Status == "paused") {
			if rec.State == ContainerCreated && (st.Status != "created" || rec.Pid == 0) {
				// Started, but the daemon died before recording it.
				rec.Pid = st.Pid
				if st.Status != "created" {
					rec.State, rec.StartedAt = ContainerRunning, st.Created
				}
				if err := s.saveContainer(rec); err != nil {
					s.log.Error("recovery: container record", "id", rec.ID, "error", err)
				}
			}
			return
		}
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			s.log.Warn("recovery: runc state", "id", rec.ID, "error", err)
			return
		}
		if rec.prepared() && bundleReady(rec) {
			return // never run: StartContainer may still run it
		}
		rec.State, rec.ExitCode, rec.FinishedAt, rec.Reason = ContainerExited, 255, time.Now(), ReasonUnknown
		rec.Message = "container exit was not recorded (monitor gone or host rebooted)"
		if rec.Pid == 0 {
			rec.Message = "container never started, and its bundle is gone (host rebooted)"
		}
	}
	if err := s.saveContainer(rec); err != nil {
		s.log.Error("recovery: container record", "id", rec.ID, "error", err)
	}
}

// removeOrphanDirs removes bundles and pod dirs that no record owns: they can
// only be leftovers of work that never wrote its intent. Those of quarantined
// records are owned.
func (s *Service) removeOrphanDirs(ctx context.Context) {
	known := map[string]bool{}
	for _, sb := range s.Sandboxes() {
		known[sb.ID] = true
	}
	for _, c := range s.Containers() {
		known[c.ID] = true
	}
	for _, q := range s.Quarantined() {
		known[q.ID] = true
	}
	for _, dir := range []string{s.bundlesDir(), s.podsDir()} {
		for _, id := range recordIDs(dir) {
			if known[id] {
				continue
			}
			s.log.Info("recovery: removing orphan directory", "dir", filepath.Join(dir, id))
			if dir == s.podsDir() {
				_ = s.host.UnpinNamespaces(filepath.Join(dir, id, "ns"))
			} else {
				// No record says which runc made it: ask each.
				for _, rt := range s.allRuntimes() {
					_ = s.killAndDelete(ctx, rt, id, bundleCgroupsPath(filepath.Join(dir, id)), false)
				}
				_ = s.host.UnmountRootfs(filepath.Join(dir, id, "rootfs"))
			}
			_ = os.RemoveAll(filepath.Join(dir, id))
		}
	}
	s.removeOrphanUsernsDirs(known)
}

// removeOrphanUsernsDirs unmounts and removes the user-namespaced root
// filesystems no record owns, then the pod directories left empty.
func (s *Service) removeOrphanUsernsDirs(known map[string]bool) {
	for _, pod := range recordIDs(s.usernsDir()) {
		_ = s.cleanUsernsPodDir(pod, known)
	}
}

// cleanUsernsPodDir unmounts and removes the root filesystems in a pod's
// directory under usernsDir that known does not name (berth-pause's is
// the pod's), then the directory if the pod is not known either. Only
// empty directories are removed: a rootfs that will not unmount stays.
func (s *Service) cleanUsernsPodDir(pod string, known map[string]bool) error {
	podDir := filepath.Join(s.usernsDir(), pod)
	var errs []error
	for _, id := range recordIDs(podDir) {
		if (id == pauseRootfsName && known[pod]) || known[id] {
			continue
		}
		s.log.Info("removing a rootfs directory no container owns", "dir", filepath.Join(podDir, id))
		if id == pauseRootfsName {
			errs = append(errs, removePauseRootfsDir(filepath.Join(podDir, id)))
			continue
		}
		errs = append(errs, s.host.UnmountRootfs(filepath.Join(podDir, id)), removeEmptyDir(filepath.Join(podDir, id)))
	}
	if !known[pod] {
		errs = append(errs, removeEmptyDir(podDir))
	}
	return errors.Join(errs...)
}

func (s *Service) allContainers() []*containerEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*containerEntry, 0, len(s.containers))
	for _, e := range s.containers {
		out = append(out, e)
	}
	return out
}

// bundleReady reports whether a prepared container's bundle is still there
// to run (a reboot clears the state directory). Its sandbox is not ready
// after a reboot anyway, and StartContainer refuses to run in it.
func bundleReady(rec *Container) bool {
	_, err := os.Stat(filepath.Join(rec.Bundle, "config.json"))
	return err == nil
}
