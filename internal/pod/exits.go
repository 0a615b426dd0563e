package pod

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// exitWatcher watches the exits directory, where monitors write one file per
// container exit, and applies each exit to its container as it appears. The
// files stay until the container is removed, so an exit that happened while
// the daemon was down is read by recovery instead.
//
// The inotify descriptor is non-blocking and read through an *os.File, so
// that close wakes the read (the runtime poller) instead of leaving it
// blocked on a descriptor number that the next open may reuse.
//
// Without inotify (the uid's instances or watches used up: they are shared
// by every root process) the watcher polls the directory every
// exitPollInterval instead; it says so in the log.
type exitWatcher struct {
	file    *os.File // nil while polling
	once    sync.Once
	done    chan struct{}
	stopped chan struct{} // closed when loop or poll returns
	handle  func(id string)
	log     *slog.Logger
}

// exitPollInterval is how often the exits directory is listed without inotify.
const exitPollInterval = 500 * time.Millisecond

// inotifyInit makes an inotify instance; a test replaces it to make one
// unavailable.
var inotifyInit = unix.InotifyInit1

func newExitWatcher(dir string, log *slog.Logger, handle func(id string)) (*exitWatcher, error) {
	w := &exitWatcher{done: make(chan struct{}), stopped: make(chan struct{}), handle: handle, log: log}
	fd, err := inotifyInit(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		w.startPolling(dir, fmt.Errorf("inotify instance: %w", err))
		return w, nil
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		_ = unix.Close(fd) // the watch's error is the one to report
		if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.ENOMEM) {
			return nil, err
		}
		w.startPolling(dir, fmt.Errorf("inotify watch: %w", err))
		return w, nil
	}
	w.file = os.NewFile(uintptr(fd), "inotify "+dir)
	go w.loop()
	return w, nil
}

// startPolling lists dir now, and then every exitPollInterval hands each
// exit file that was not there before to the handler.
func (w *exitWatcher) startPolling(dir string, why error) {
	w.log.Warn("exit watcher: inotify unavailable; polling the exits directory",
		"dir", dir, "interval", exitPollInterval, "error", why)
	seen, _ := exitFileIDs(dir) // as with inotify, files already there are recovery's
	go w.poll(dir, seen)
}

func (w *exitWatcher) poll(dir string, seen map[string]bool) {
	defer close(w.stopped)
	tick := time.NewTicker(exitPollInterval)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-w.done:
			return
		case <-tick.C:
		}
		ids, err := exitFileIDs(dir)
		if err != nil { // kept: an unreadable listing is no deletion
			if !failing {
				w.log.Error("exit watcher: listing the exits directory", "dir", dir, "error", err)
			}
			failing = true
			continue
		}
		failing = false
		for id := range ids {
			if !seen[id] {
				w.handle(id)
			}
		}
		seen = ids
	}
}

// exitFileIDs lists the ids of the exit files in dir.
func exitFileIDs(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if id, ok := exitFileID(e.Name()); ok {
			ids[id] = true
		}
	}
	return ids, nil
}

// exitFileID returns the container id of an exit file's name; temporary
// files (dot-prefixed) and other names are not exit files.
func exitFileID(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".json")
	return id, ok && !strings.HasPrefix(name, ".")
}

func (w *exitWatcher) loop() {
	defer close(w.stopped)
	buf := make([]byte, 64*1024)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			select {
			case <-w.done:
			default:
				w.log.Error("exit watcher stopped", "error", err)
			}
			return
		}
		w.dispatch(buf[:n])
	}
}

// dispatch hands the id of each exit file named in a read of inotify
// events to the handler.
func (w *exitWatcher) dispatch(buf []byte) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off])) //nolint:gosec // G103: the loop bound keeps a whole event header within the bytes read
		end := off + unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			w.log.Error("exit watcher: inotify event longer than the read", "length", ev.Len)
			return
		}
		name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:end]), "\x00")
		off = end
		if id, ok := exitFileID(name); ok {
			w.handle(id)
		}
	}
}

func (w *exitWatcher) close() {
	w.once.Do(func() {
		close(w.done)
		if w.file != nil {
			_ = w.file.Close() // wakes loop's read; nothing was written
		}
	})
}

// watchExits starts the exit watcher.
func (s *Service) watchExits() error {
	w, err := newExitWatcher(s.exitsDir(), s.log, s.handleExitFile)
	if err != nil {
		return err
	}
	s.exitWatcher = w
	return nil
}

// handleExitFile applies the exit file of a container, or marks a sandbox
// not ready when its berth-pause exited.
func (s *Service) handleExitFile(id string) {
	s.mu.RLock()
	c, isContainer := s.containers[id]
	sb, isSandbox := s.sandboxes[id]
	s.mu.RUnlock()
	switch {
	case isContainer:
		s.refreshExit(c)
	case isSandbox:
		rec := sb.snapshot()
		if rec.State == SandboxReady && rec.PausePid != 0 {
			if sb.stopping.Load() {
				s.log.Debug("berth-pause exited (pod sandbox stopping)", "id", id)
			} else {
				s.log.Warn("berth-pause exited; pod sandbox not ready", "id", id)
			}
			s.markSandboxNotReady(sb)
		}
	}
}

// markSandboxNotReady turns a ready sandbox not ready (kubelet then stops
// and recreates it).
func (s *Service) markSandboxNotReady(e *sandboxEntry) {
	if err := s.updateSandbox(e, func(r *Sandbox) bool {
		changed := r.State == SandboxReady
		r.State = SandboxNotReady
		return changed
	}); err != nil {
		s.log.Error("sandbox record", "id", e.snapshot().ID, "error", err)
	}
	s.sandboxMaybeStopped(e)
}

// refreshExit reads the container's exit file, if any, and records the exit.
func (s *Service) refreshExit(e *containerEntry) {
	rec := e.snapshot()
	if rec.State != ContainerCreated && rec.State != ContainerRunning {
		return
	}
	x, err := monitor.ReadExitFile(s.exitsDir(), rec.ID)
	if err != nil {
		if !errdefs.IsNotFound(err) && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("exit file", "id", rec.ID, "error", err)
		}
		return
	}
	s.applyExit(e, x, "")
}

// applyExit records an exit once; reason "" derives it from the exit code.
func (s *Service) applyExit(e *containerEntry, x *monitor.ExitRecord, reason string) {
	message := ""
	switch {
	case x.Unknown:
		reason, message = ReasonUnknown, "exit status unknown: the pod's monitor died while the container ran"
	case reason == "":
		reason = exitReason(x.ExitCode, x.OOMKilled)
	}
	s.recordExit(e, x, reason, message)
}

// recordExit records an exit with its reason and message ("": none) once.
func (s *Service) recordExit(e *containerEntry, x *monitor.ExitRecord, reason, message string) {
	applied := false
	err := s.updateContainer(e, func(c *Container) bool {
		if c.State != ContainerCreated && c.State != ContainerRunning {
			return false
		}
		applied = true
		c.State = ContainerExited
		c.ExitCode = x.ExitCode
		c.FinishedAt = x.FinishedAt
		c.Reason = reason
		if message != "" {
			c.Message = message
		}
		return true
	})
	if err != nil {
		s.log.Error("container record", "id", x.ID, "error", err)
		return
	}
	if applied {
		s.outputs.release(x.ID)
		close(e.exited)
		s.containerStopped(e)
		s.log.Info("container exited", "id", x.ID, "exitCode", x.ExitCode, "reason", reason)
	}
}
