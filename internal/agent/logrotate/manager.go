package logrotate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	return &Manager{cfg: cfg}, nil
}

// Run rotates the logs every Policy.Interval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	ticker := m.cfg.Clock.NewTicker(m.cfg.Policy.Interval)
	defer ticker.Stop()
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
// (see the package's doc), and reopens it if it is missing.
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
	if err := m.tidy(dir, base); err != nil {
		return err
	}
	return m.rotateCurrent(ctx, dir, base, c.ID)
}

// tidy removes what an interrupted round left and the rotated files
// beyond Policy.MaxFiles-2 (the current log and the one about to be
// rotated make the rest), and compresses the ones left plain.
func (m *Manager) tidy(dir *logDir, base string) error {
	names, err := dir.names()
	if err != nil {
		return err
	}
	rots := rotations(base, names)
	for _, r := range rots {
		name := base + "." + r.stamp
		if r.tmp {
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
		r := rots[i]
		name := base + "." + r.stamp
		for _, file := range []string{name, name + gzSuffix} {
			if err := dir.remove(file); err != nil {
				return err
			}
		}
	}
	for _, r := range rots[max(excess, 0):] {
		if r.plain && !r.gz {
			if err := dir.compress(base + "." + r.stamp); err != nil {
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
