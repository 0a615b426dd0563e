package monitord

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/runc"
)

const (
	// DrainTimeout bounds how long output is read after a container's init
	// exited (a leftover process may hold its stdio open).
	DrainTimeout = 2 * time.Second
	// consoleTimeout bounds the wait for runc's pty master.
	consoleTimeout = 10 * time.Second
)

// container is one container the monitor created.
type container struct {
	id      string
	pid     int
	log     *crilog.Writer
	stdio   *stdio
	oom     *oomCounter
	copied  chan struct{} // closed when both streams are drained
	started bool          // guarded by Server.mu
	exit    *monitor.ExitRecord
	// Attach: the output's clients and how the container's stdin was made.
	fan         *fanout
	tty         bool
	stdin       bool
	stdinOnce   bool
	stdinClosed sync.Once
}

// create runs runc create for r, or runc run --detach when r.Run, and
// starts logging the container.
func (s *Server) create(ctx context.Context, r monitor.CreateRequest) (int, error) {
	if err := monitor.ValidID(r.ID); err != nil {
		return 0, err
	}
	if r.Bundle == "" {
		return 0, fmt.Errorf("container %s: bundle is required: %w", r.ID, errdefs.ErrInvalidArgument)
	}
	if err := s.reserve(r.ID); err != nil {
		return 0, err
	}
	defer s.release(r.ID)
	c, err := s.runcCreate(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("container %s: %w", r.ID, err)
	}
	c.started = r.Run
	s.mu.Lock()
	s.containers[r.ID] = c
	s.mu.Unlock()
	if r.Run {
		s.log.Printf("pod %s: container %s: started, pid %d", s.cfg.Pod, r.ID, c.pid)
	} else {
		s.log.Printf("pod %s: container %s: created, pid %d", s.cfg.Pod, r.ID, c.pid)
	}
	return c.pid, nil
}

func (s *Server) reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.containers[id]; ok || s.creating[id] {
		return fmt.Errorf("container %s: %w", id, errdefs.ErrAlreadyExists)
	}
	s.creating[id] = true
	return nil
}

func (s *Server) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.creating, id)
}

// runcCreate opens the log and stdio, runs runc create with them, claims
// the init pid from the reaper and starts copying output. Every step is
// undone when a later one fails.
func (s *Server) runcCreate(ctx context.Context, r monitor.CreateRequest) (_ *container, err error) {
	logw, err := openLog(r)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if aerr := logw.Abandon(); aerr != nil {
				s.log.Printf("pod %s: container %s: %v", s.cfg.Pod, r.ID, aerr)
			}
		}
	}()
	streams, err := openStdio(r)
	if err != nil {
		return nil, err
	}
	defer streams.closeRuncSide()
	defer func() {
		if err != nil {
			streams.closeMonitorSide()
		}
	}()
	scratch, err := os.MkdirTemp("", "berth-create-")
	if err != nil {
		return nil, fmt.Errorf("pid file directory: %w", err)
	}
	defer os.RemoveAll(scratch)

	sub := s.reaper.Subscribe()
	defer s.reaper.Unsubscribe(sub)
	pid, err := s.runRuncCreate(ctx, r, streams, filepath.Join(scratch, "init.pid"))
	if err != nil {
		return nil, err
	}
	exited := s.reaper.Claim(sub, pid)
	c := &container{id: r.ID, pid: pid, log: logw, stdio: streams, oom: newOOMCounter(r.CgroupPath, s.oomWatch),
		fan: newFanout(), tty: r.Terminal, stdin: r.Stdin, stdinOnce: r.StdinOnce}
	c.copied = c.copyOutput()
	go s.watch(c, exited)
	return c, nil
}

// openLog opens the container's log beneath the pod's log directory
// (crilog.Open: no symlink followed). A request from a daemon that
// predates LogDirectory names only LogPath: its directory is then the
// trusted part. No log at all: output is discarded, as CRI allows.
func openLog(r monitor.CreateRequest) (*crilog.Writer, error) {
	dir, rel := r.LogDirectory, r.LogRelPath
	if dir == "" && r.LogPath != "" {
		dir, rel = filepath.Dir(r.LogPath), filepath.Base(r.LogPath)
	}
	if dir == "" {
		return crilog.Discard()
	}
	w, err := crilog.Open(dir, rel)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", r.ID, err)
	}
	return w, nil
}

// openStdio makes a terminal, or the output FIFOs in the bundle.
func openStdio(r monitor.CreateRequest) (*stdio, error) {
	if r.Terminal {
		return newTerminal()
	}
	return newFIFOs(r.Bundle, r.Stdin)
}

// runRuncCreate runs runc create (run --detach when r.Run) and returns
// the init pid; a container left behind by a later failure is
// force-deleted.
func (s *Server) runRuncCreate(ctx context.Context, r monitor.CreateRequest, streams *stdio, pidFile string) (int, error) {
	opts := runc.CreateOpts{Bundle: r.Bundle, PidFile: pidFile, Stdin: streams.runcIn, Stdout: streams.runcOut, Stderr: streams.runcErr}
	if streams.console != nil {
		opts.ConsoleSocket = streams.console.path
	}
	rc := *s.runc
	rc.SystemdCgroup = r.SystemdCgroup
	create := rc.Create
	if r.Run {
		create = rc.Run
	}
	if err := create(ctx, r.ID, opts); err != nil {
		return 0, err
	}
	pid, err := readPidFile(pidFile)
	if err == nil && streams.console != nil {
		err = streams.receiveConsole(consoleTimeout)
	}
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if derr := s.runc.Delete(cleanup, r.ID, true); derr != nil {
			s.log.Printf("pod %s: container %s: rollback: %v", s.cfg.Pod, r.ID, derr)
		}
		return 0, err
	}
	return pid, nil
}

func readPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %q: not a pid", data)
	}
	return pid, nil
}

// copyOutput copies stdout and stderr into the log and to attached
// clients; the returned channel is closed when both have ended, and the
// clients' sessions end then.
func (c *container) copyOutput() chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for stream, f := range map[crilog.Stream]*os.File{crilog.Stdout: c.stdio.stdout, crilog.Stderr: c.stdio.stderr} {
		if f == nil {
			continue
		}
		kind := monitor.FrameStdout
		if stream == crilog.Stderr {
			kind = monitor.FrameStderr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.log.Copy(stream, teeReader{r: f, kind: kind, fan: c.fan}) // write errors cannot reach anyone; output is drained
		}()
	}
	go func() {
		wg.Wait()
		c.fan.close()
		close(done)
	}()
	return done
}

// watch waits for the container's init to exit, then drains its output,
// writes its exit file and keeps the record.
func (s *Server) watch(c *container, exited <-chan Exit) {
	e := <-exited
	finished := time.Now()
	// Read the OOM count now, before draining output: under the systemd
	// driver the scope (and its memory.events) may go at any moment.
	oomKilled := c.oom.killed()
	c.oom.stop()
	if oomKilled {
		s.log.Printf("pod %s: container %s: OOM-killed, counted in %s", s.cfg.Pod, c.id, c.oom.file)
	}
	s.drainOutput(c)
	rec := exitRecord(c, e, finished, oomKilled)
	if err := monitor.WriteExitFile(s.cfg.ExitDir, rec); err != nil {
		s.log.Printf("pod %s: container %s: %v", s.cfg.Pod, c.id, err)
	}
	s.mu.Lock()
	c.exit = &rec
	s.mu.Unlock()
	s.log.Printf("pod %s: container %s: exited, code %d", s.cfg.Pod, c.id, rec.ExitCode)
}

// drainOutput waits, at most DrainTimeout (a leftover process may hold the
// container's stdio open), for the copy of an ended container's output,
// then closes the monitor's side and the log.
func (s *Server) drainOutput(c *container) {
	select {
	case <-c.copied:
	case <-time.After(DrainTimeout):
		s.log.Printf("pod %s: container %s: output still open after %s", s.cfg.Pod, c.id, DrainTimeout)
	}
	c.stdio.closeMonitorSide()
	<-c.copied
	c.log.Close()
}

func exitRecord(c *container, e Exit, finished time.Time, oomKilled bool) monitor.ExitRecord {
	rec := monitor.ExitRecord{
		Version:    monitor.ExitRecordVersion,
		ID:         c.id,
		Pid:        c.pid,
		ExitCode:   int32(e.Status.ExitStatus()),
		OOMKilled:  oomKilled,
		FinishedAt: finished,
	}
	if e.Status.Signaled() {
		rec.Signal = int(e.Status.Signal())
		rec.ExitCode = 128 + int32(rec.Signal)
	}
	return rec
}

// start runs runc start for a created container.
func (s *Server) start(ctx context.Context, id string) error {
	s.mu.Lock()
	c, ok := s.containers[id]
	var state error
	switch {
	case !ok:
		state = fmt.Errorf("container %s: %w", id, errdefs.ErrNotFound)
	case c.exit != nil:
		state = fmt.Errorf("container %s: exited: %w", id, errdefs.ErrFailedPrecondition)
	case c.started:
		state = fmt.Errorf("container %s: already started: %w", id, errdefs.ErrFailedPrecondition)
	default:
		c.started = true
	}
	s.mu.Unlock()
	if state != nil {
		return state
	}
	if err := s.runc.Start(ctx, id); err != nil {
		s.mu.Lock()
		c.started = false
		s.mu.Unlock()
		return fmt.Errorf("container %s: %w", id, err)
	}
	return nil
}

func (s *Server) list() []monitor.ContainerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	infos := make([]monitor.ContainerInfo, 0, len(s.containers))
	for _, c := range s.containers {
		infos = append(infos, monitor.ContainerInfo{ID: c.id, Pid: c.pid, Running: c.exit == nil, Exit: c.exit})
	}
	return infos
}

func (s *Server) running() int {
	n := 0
	for _, info := range s.list() {
		if info.Running {
			n++
		}
	}
	return n
}

// forget drops a container's record; its exit, if still to come, is
// written to the exit dir all the same. Unknown ids are not an error.
func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.containers, id)
}

func (s *Server) reopenLog(id string) error {
	s.mu.Lock()
	c, ok := s.containers[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("container %s: %w", id, errdefs.ErrNotFound)
	}
	return c.log.Reopen()
}
