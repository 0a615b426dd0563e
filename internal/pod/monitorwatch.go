package pod

import (
	"context"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// takeoverTimeout bounds the work of taking a pod over from a monitor that
// died: a new monitor's launch, and runc state and adopt per container.
const takeoverTimeout = time.Minute

// monitorWatches holds the stop function of each watched pod monitor, by
// sandbox id. It owns only that map.
type monitorWatches struct {
	mu   sync.Mutex
	stop map[string]func()
}

// set records the watch of a sandbox's monitor, stopping the one before.
func (w *monitorWatches) set(id string, stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop == nil {
		w.stop = map[string]func(){}
	}
	if old := w.stop[id]; old != nil {
		old()
	}
	w.stop[id] = stop
}

// drop stops and forgets the watch of a sandbox's monitor.
func (w *monitorWatches) drop(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if stop := w.stop[id]; stop != nil {
		stop()
	}
	delete(w.stop, id)
}

// watchMonitor learns at once (a pidfd) when the monitor pid of sandbox id
// ends. It reports gone when the monitor has already ended (or the pid is
// no longer it): the caller takes the pod over then (monitorDied).
func (s *Service) watchMonitor(id string, pid int, socket string) (gone bool) {
	stop, err := s.monitors.Watch(pid, socket, func() { s.monitorDied(id, pid) })
	if err != nil {
		if errdefs.IsNotFound(err) {
			return true
		}
		s.log.Warn("pod monitor: cannot watch it", "id", id, "pid", pid, "error", err)
		return false
	}
	s.watches.set(id, stop)
	return false
}

// monitorDied takes a pod over from its monitor, which ended while the pod
// was not being removed (killed, crashed; or while the daemon was down): a
// new monitor is launched on the same socket, and each created or running
// container — berth-pause too — whose process still lives is adopted by
// it; one whose process is gone is recorded as exited with reason Unknown,
// for its exit status died with the monitor. A ready pod always gets a new
// monitor (its next containers need one); a stopped pod with nothing
// running keeps none.
func (s *Service) monitorDied(id string, pid int) {
	e, unlock, _ := s.lockSandboxIfKnown(id)
	if e == nil {
		return // removed: its monitor was stopped on purpose
	}
	defer unlock()
	rec := e.snapshot()
	if rec.MonitorPid != pid {
		return // a newer monitor took over already
	}
	ctx, cancel := context.WithTimeout(context.Background(), takeoverTimeout)
	defer cancel()
	live := s.liveContainers(rec.ID)
	pause := rec.State == SandboxReady && rec.PausePid != 0
	if len(live) == 0 && rec.State != SandboxReady {
		s.log.Info("pod monitor ended; nothing of the pod runs", "id", id, "pid", pid)
		return
	}
	s.log.Warn("pod monitor died; a new one takes the pod over", "id", id, "pid", pid, "containers", len(live))
	newPid, err := s.monitors.Launch(s.monitorLaunchOptions(&rec))
	if err != nil {
		// Not ready: kubelet stops and recreates the pod; stopping its
		// containers works without a monitor (exitWithoutMonitor).
		s.log.Error("pod monitor: takeover failed; pod sandbox not ready", "id", id, "error", err)
		s.markSandboxNotReady(e)
		return
	}
	if err := s.updateSandbox(e, func(r *Sandbox) bool { r.MonitorPid = newPid; return true }); err != nil {
		s.log.Error("sandbox record", "id", id, "error", err)
	}
	if s.watchMonitor(rec.ID, newPid, rec.MonitorSocket) {
		// The new monitor is gone already: no third one (a monitor that
		// cannot live would be relaunched forever).
		s.log.Error("pod monitor: the new monitor ended at once; pod sandbox not ready", "id", id, "pid", newPid)
		s.markSandboxNotReady(e)
		return
	}
	if pause {
		s.adoptPause(ctx, e)
	}
	for _, c := range live {
		s.adoptContainer(ctx, &rec, c)
	}
}

// liveContainers lists the sandbox's created and running containers.
func (s *Service) liveContainers(sandboxID string) []*containerEntry {
	var out []*containerEntry
	for _, c := range s.containersOf(sandboxID) {
		if st := c.snapshot().State; st == ContainerCreated || st == ContainerRunning {
			out = append(out, c)
		}
	}
	return out
}

// adoptContainer hands one container to the pod's new monitor, or records
// its exit when its process is gone.
func (s *Service) adoptContainer(ctx context.Context, sb *Sandbox, c *containerEntry) {
	c.op.Lock()
	defer c.op.Unlock()
	s.refreshExit(c) // the dead monitor may have written its exit
	rec := c.snapshot()
	if rec.State != ContainerCreated && rec.State != ContainerRunning || rec.prepared() {
		return // a prepared container has no process yet; the new monitor runs it
	}
	st, err := s.runtimeFor(rec.RuntimeHandler).State(ctx, rec.ID)
	if err == nil && (st.Status == "running" || st.Status == "created" || st.Status == "paused") {
		err = s.calls.Adopt(ctx, sb.MonitorSocket, monitor.AdoptRequest{
			ID: rec.ID, Pid: st.Pid, Started: rec.State == ContainerRunning,
			Bundle: rec.Bundle, LogDirectory: logDirectory(&rec, sb), LogRelPath: logRelPath(&rec, sb),
		})
		if err == nil {
			s.log.Info("container adopted by the pod's new monitor", "id", rec.ID, "pid", st.Pid)
			return
		}
	}
	if err != nil && !errdefs.IsNotFound(err) {
		s.log.Error("container: takeover failed; its exit will not be seen", "id", rec.ID, "error", err)
		return
	}
	s.applyExit(c, &monitor.ExitRecord{ID: rec.ID, ExitCode: 255, Unknown: true, FinishedAt: time.Now()}, "")
}

// adoptPause hands the pod's berth-pause to the new monitor; a berth-pause
// that is gone makes the pod not ready, as its exit would have.
func (s *Service) adoptPause(ctx context.Context, e *sandboxEntry) {
	rec := e.snapshot()
	err := s.calls.Adopt(ctx, rec.MonitorSocket, monitor.AdoptRequest{ID: rec.ID, Pid: rec.PausePid, Started: true})
	if err == nil {
		return
	}
	s.log.Warn("berth-pause: takeover failed; pod sandbox not ready", "id", rec.ID, "error", err)
	s.markSandboxNotReady(e)
}
