package imagegc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Runtime is what the manager asks the runtime service: every container,
// whatever its state, to know which images are in use.
type Runtime interface {
	ListContainers(ctx context.Context, labels map[string]string) ([]*runtimeapi.Container, error)
}

// Images is what the manager asks the image service (criclient.Images
// has it).
type Images interface {
	ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error)
	ListImages(ctx context.Context) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Config configures a Manager.
type Config struct {
	Runtime Runtime
	Images  Images
	Policy  Policy
	// Period between collections; default DefaultPeriod (kubelet's).
	Period time.Duration
	// Needed returns the image references the agent's pods name; their
	// images are never removed. Nil: none.
	Needed func() []string
	// Collected, when set, is called after each collection whose listing
	// succeeded (GarbageCollect, DeleteUnusedImages) with the ids of the
	// images left and the time taken before the listing (kubelet's
	// PostImageGCHook: the agent prunes its image pull records).
	Collected func(remaining []string, listedAt time.Time)
	// Statfs measures the filesystem holding path; default statfs(2).
	Statfs func(path string) (FsStats, error)
	// Clock is what the manager reads the time from and ticks with;
	// default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// FsStats is a filesystem's size and free space, in bytes.
type FsStats struct {
	Capacity, Available uint64
}

// record is what the manager remembers of an image (kubelet's
// imageRecord).
type record struct {
	firstDetected time.Time
	lastUsed      time.Time // zero: never seen in use
}

// candidate is an image that may be removed, with its record.
type candidate struct {
	id   string
	tags []string
	size int64
	record
}

// Manager collects unused images. Its collections run one at a time.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	began time.Time // when the manager was made: MaxAge waits for it

	mu      sync.Mutex // one collection at a time; guards records
	records map[string]*record
}

// New checks cfg and returns a manager; Run starts its rounds.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil || cfg.Images == nil {
		return nil, errors.New("image gc: a runtime and an image service are required")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("image gc: %w", err)
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Statfs == nil {
		cfg.Statfs = Statfs
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		cfg: cfg, log: cfg.Logger.With("component", "image-gc"),
		began: cfg.Clock.Now(), records: map[string]*record{},
	}, nil
}

// Run collects at once, then every Period, until ctx ends. With image
// garbage collection off (a high threshold of 100) it returns at once.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.Policy.disabled() {
		m.log.Info("image garbage collection is off (--image-gc-high-threshold=100)")
		return
	}
	ticker := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer ticker.Stop()
	for {
		if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("ImageGCFailed: image garbage collection failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// GarbageCollect is one round: images unused for longer than MaxAge go;
// then, if the image filesystem is at or above the high threshold, unused
// images go, least recently used first, until the low threshold would be
// reached.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	candidates, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	defer m.collected(now)
	candidates = m.freeOld(ctx, candidates, now)
	fs, err := m.imageFs(ctx)
	if err != nil {
		return err
	}
	usage := 100 - int(fs.Available*100/fs.Capacity)
	if usage < m.cfg.Policy.HighThresholdPercent {
		return nil
	}
	toFree := int64(fs.Capacity*uint64(100-m.cfg.Policy.LowThresholdPercent)/100) - int64(fs.Available)
	m.log.Info("disk usage on the image filesystem is over the high threshold; freeing bytes down to the low threshold",
		"usage", usage, "highThreshold", m.cfg.Policy.HighThresholdPercent, "lowThreshold", m.cfg.Policy.LowThresholdPercent, "amountToFree", toFree)
	freed := m.freeSpace(ctx, toFree, now, candidates, "disk usage over the high threshold")
	if freed < toFree {
		return fmt.Errorf("FreeDiskSpaceFailed: attempted to free %d bytes, but only found %d bytes eligible to free", toFree, freed)
	}
	return nil
}

// DeleteUnusedImages removes every image that may go (unused, unpinned,
// not named by a pod, older than MinAge), least recently used first, and
// returns the bytes their sizes add up to. The eviction manager calls it
// under disk pressure.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	candidates, err := m.detect(ctx, now)
	if err != nil {
		return 0, err
	}
	defer m.collected(now)
	return m.freeSpace(ctx, math.MaxInt64, now, candidates, "disk pressure"), nil
}

// collected tells Config.Collected the images left after a round: those
// the records hold (detect keeps them to the listed images, remove drops
// what it removed). The caller holds m.mu.
func (m *Manager) collected(listedAt time.Time) {
	if m.cfg.Collected == nil {
		return
	}
	remaining := make([]string, 0, len(m.records))
	for id := range m.records {
		remaining = append(remaining, id)
	}
	m.cfg.Collected(remaining, listedAt)
}

// imageFs measures the image filesystem: its mountpoint comes from CRI
// ImageFsInfo, its size and free space from statfs, as kubelet's cAdvisor
// measures it.
func (m *Manager) imageFs(ctx context.Context) (FsStats, error) {
	info, err := m.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return FsStats{}, fmt.Errorf("image filesystem: ImageFsInfo: %w", err)
	}
	fss := info.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return FsStats{}, errors.New("image filesystem: the runtime's ImageFsInfo names no image filesystem")
	}
	path := fss[0].GetFsId().GetMountpoint()
	fs, err := m.cfg.Statfs(path)
	if err != nil {
		return FsStats{}, fmt.Errorf("image filesystem %s: %w", path, err)
	}
	if fs.Capacity == 0 {
		return FsStats{}, fmt.Errorf("image filesystem %s: invalid capacity 0", path)
	}
	fs.Available = min(fs.Available, fs.Capacity)
	return fs, nil
}

// freeOld removes the candidates unused for longer than MaxAge (a never
// used image counts from when it was first seen) and returns the others.
// Like kubelet, it waits MaxAge after the manager started, since records
// start afresh then.
func (m *Manager) freeOld(ctx context.Context, candidates []candidate, now time.Time) []candidate {
	maxAge := m.cfg.Policy.MaxAge
	if maxAge == 0 || now.Sub(m.began) <= maxAge {
		return candidates
	}
	var left []candidate
	for _, c := range candidates {
		unusedSince := c.lastUsed
		if unusedSince.IsZero() {
			unusedSince = c.firstDetected
		}
		if now.Sub(unusedSince) <= maxAge || now.Sub(c.firstDetected) < m.cfg.Policy.MinAge || !m.remove(ctx, c, "unused for longer than --image-maximum-gc-age") {
			left = append(left, c)
		}
	}
	return left
}

// freeSpace removes candidates in order, skipping those younger than
// MinAge, until their sizes add up to toFree; it returns what they add up
// to.
func (m *Manager) freeSpace(ctx context.Context, toFree int64, now time.Time, candidates []candidate, why string) int64 {
	var freed int64
	for _, c := range candidates {
		if freed >= toFree {
			break
		}
		if now.Sub(c.firstDetected) < m.cfg.Policy.MinAge {
			continue
		}
		if m.remove(ctx, c, why) {
			freed += c.size
		}
	}
	return freed
}

// remove removes one image and its record; a failure is logged.
func (m *Manager) remove(ctx context.Context, c candidate, why string) bool {
	if err := m.cfg.Images.RemoveImage(ctx, c.id); err != nil {
		m.log.Warn("image garbage collection: cannot remove image", "image", c.id, "tags", c.tags, "error", err)
		return false
	}
	delete(m.records, c.id)
	m.log.Info("image garbage collected", "image", c.id, "tags", c.tags, "size", c.size, "reason", why,
		"lastUsed", c.lastUsed, "firstDetected", c.firstDetected)
	return true
}

// sortCandidates orders candidates least recently used first, then first
// detected first (kubelet's byLastUsedAndDetected).
func sortCandidates(cs []candidate) {
	sort.SliceStable(cs, func(i, j int) bool {
		if !cs[i].lastUsed.Equal(cs[j].lastUsed) {
			return cs[i].lastUsed.Before(cs[j].lastUsed)
		}
		if !cs[i].firstDetected.Equal(cs[j].firstDetected) {
			return cs[i].firstDetected.Before(cs[j].firstDetected)
		}
		return cs[i].id < cs[j].id
	})
}
