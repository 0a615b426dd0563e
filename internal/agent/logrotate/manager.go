package logrotate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"k8s.io/utils/clock"
)

// Container is a running container whose log the Manager looks after.
type Container struct {
	ID      string
	LogPath string // absolute, beneath Config.Root
}

// Config configures a Manager.
type Config struct {
	// Root is the pods' log root: every log path must be beneath it.
	Root   string
	Policy Policy
	// Containers lists the running containers whose logs are rotated.
	Containers func(ctx context.Context) ([]Container, error)
	// Reopen asks the runtime to reopen a container's log (CRI
	// ReopenContainerLog).
	Reopen func(ctx context.Context, id string) error
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Manager rotates the logs of running containers.
type Manager struct {
	cfg Config

	mu sync.Mutex
	// compressing holds the logs whose rotated files are being
	// compressed (by their paths), at most one compression each; true
	// when a later rotation asked it to look again once done.
	compressing  map[string]bool
	compressions sync.WaitGroup
	slots        chan struct{} // Policy.Workers compressions at once
	listed       func()        // tests: called once a compression has listed the files
}

// New checks cfg (its Policy with defaults filled) and returns a Manager.
func New(cfg Config) (*Manager, error) {
	cfg.Policy = cfg.Policy.WithDefaults()
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Root == "" || cfg.Containers == nil || cfg.Reopen == nil {
		return nil, errors.New("log rotation: a log root, a container list and a reopen function are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, compressing: map[string]bool{}, slots: make(chan struct{}, cfg.Policy.Workers)}, nil
}

// Run rotates the logs every Policy.Interval until ctx ends; it returns
// once the compressions it started have stopped.
func (m *Manager) Run(ctx context.Context) {
	ticker := m.cfg.Clock.NewTicker(m.cfg.Policy.Interval)
	defer ticker.Stop()
	defer m.WaitCompressed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if err := m.RotateAll(ctx); err != nil {
				m.cfg.Logger.Warn("container log rotation", "error", err)
			}
		}
	}
}

// RotateAll makes one round: it rotates the log of every running
// container that needs it, Policy.Workers at once, and returns when all
// are done. A container's failure is logged and the others go on.
func (m *Manager) RotateAll(ctx context.Context) error {
	containers, err := m.cfg.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list running containers: %w", err)
	}
	queue := make(chan Container)
	var wg sync.WaitGroup
	for range m.cfg.Policy.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range queue {
				if err := m.Rotate(ctx, c); err != nil {
					m.cfg.Logger.Warn("container log rotation", "container", c.ID, "log", c.LogPath, "error", err)
				}
			}
		}()
	}
	for _, c := range containers {
		if ctx.Err() != nil {
			break
		}
		queue <- c
	}
	close(queue)
	wg.Wait()
	return nil
}

// Rotate rotates the container's log if it is larger than Policy.MaxSize
// (see the package's doc), and reopens it if it is missing. The older
// rotated files are compressed after it returns (WaitCompressed).
func (m *Manager) Rotate(ctx context.Context, c Container) error {
	dir, base, err := openLogOf(m.cfg.Root, c.LogPath)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID, err)
	}
	defer dir.Close()
	size, exists, err := dir.size(base)
	if err != nil {
		return err
	}
	if !exists {
		// A round cut short between the rename and the reopen.
		if err := m.cfg.Reopen(ctx, c.ID); err != nil {
			return fmt.Errorf("reopen the missing log %s: %w", c.LogPath, err)
		}
		return nil
	}
	if size < m.cfg.Policy.MaxSize {
		return nil
	}
	if err := m.tidy(dir, base, m.isCompressing(c.LogPath)); err != nil {
		return err
	}
	if err := m.rotateCurrent(ctx, dir, base, c.ID); err != nil {
		return err
	}
	m.compressLater(ctx, c.LogPath)
	return nil
}

// tidy removes what an interrupted round left (but the temporary file of
// a compression under way, when busy) and the rotated files beyond
// Policy.MaxFiles-2 (the current log and the one about to be rotated make
// the rest).
func (m *Manager) tidy(dir *logDir, base string, busy bool) error {
	names, err := dir.names()
	if err != nil {
		return err
	}
	rots := rotations(base, names)
	for _, r := range rots {
		name := base + "." + r.stamp
		if r.tmp && !busy {
			if err := dir.remove(name + tmpSuffix); err != nil {
				return err
			}
		}
		if r.plain && r.gz {
			if err := dir.remove(name); err != nil {
				return err
			}
		}
	}
	excess := len(rots) - (m.cfg.Policy.MaxFiles - 2)
	for i := 0; i < excess; i++ {
		name := base + "." + rots[i].stamp
		for _, file := range []string{name, name + gzSuffix} {
			if err := dir.remove(file); err != nil {
				return err
			}
		}
	}
	return nil
}

// rotateCurrent renames the log to its rotated name and asks the runtime
// to reopen it; if it cannot, the log gets its name back.
func (m *Manager) rotateCurrent(ctx context.Context, dir *logDir, base, id string) error {
	rotated := base + "." + stamp(m.cfg.Clock.Now())
	if _, exists, err := dir.size(rotated + gzSuffix); err != nil {
		return err
	} else if exists {
		return fmt.Errorf("rotate %s/%s: %s.gz exists: next round", dir.path, base, rotated)
	}
	if err := dir.rename(base, rotated); err != nil {
		return err
	}
	if err := m.cfg.Reopen(ctx, id); err != nil {
		if rerr := dir.rename(rotated, base); rerr != nil {
			return fmt.Errorf("reopen container %s's log: %w; and the log stays %s: %w", id, err, rotated, rerr)
		}
		return fmt.Errorf("reopen container %s's log: %w (rotation undone)", id, err)
	}
	return nil
}

// compressLater compresses, in the background, the log's rotated files
// left plain but the newest (a reader that had the log open may still
// read it); while a compression of this log is under way it is asked to
// look again when done instead. Rotation does not wait for it: a log
// written faster than gzip compresses is still rotated every round, so
// each file stays near Policy.MaxSize and the files kept near
// Policy.MaxFiles of them.
func (m *Manager) compressLater(ctx context.Context, logPath string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, busy := m.compressing[logPath]; busy {
		m.compressing[logPath] = true
		return
	}
	m.compressing[logPath] = false
	m.compressions.Add(1)
	go func() {
		defer m.compressions.Done()
		for again := true; again; {
			if err := m.compressRotated(ctx, logPath); err != nil && ctx.Err() == nil {
				m.cfg.Logger.Warn("container log compression", "log", logPath, "error", err)
			}
			m.mu.Lock()
			if again = m.compressing[logPath] && ctx.Err() == nil; again {
				m.compressing[logPath] = false
			} else {
				delete(m.compressing, logPath)
			}
			m.mu.Unlock()
		}
	}()
}

func (m *Manager) isCompressing(logPath string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, busy := m.compressing[logPath]
	return busy
}

// compressRotated compresses the log's plain rotated files but the
// newest, newer first (a round removes the oldest first), while one of
// the Policy.Workers slots is its.
func (m *Manager) compressRotated(ctx context.Context, logPath string) error {
	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	case <-ctx.Done():
		return ctx.Err()
	}
	dir, base, err := openLogOf(m.cfg.Root, logPath)
	if err != nil {
		return err
	}
	defer dir.Close()
	names, err := dir.names()
	if err != nil {
		return err
	}
	rots := rotations(base, names)
	if m.listed != nil {
		m.listed()
	}
	for _, r := range slices.Backward(rots[:max(len(rots)-1, 0)]) {
		if r.plain && !r.gz {
			if err := dir.compress(ctx, base+"."+r.stamp); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitCompressed waits until the compressions started so far are done.
func (m *Manager) WaitCompressed() { m.compressions.Wait() }
