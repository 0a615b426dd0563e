package backoff

import (
	"sync"
	"time"
)

// The kubelet's defaults.
const (
	DefaultInitial    = 10 * time.Second
	DefaultMax        = 300 * time.Second
	DefaultResetAfter = 10 * time.Minute
)

// Config tunes a Backoff. Zero fields take the defaults.
type Config struct {
	Initial    time.Duration // delay after the first recorded restart (default 10 s)
	Max        time.Duration // cap of the doubling (default 300 s)
	ResetAfter time.Duration // a run at least this long resets the delay (default 10 min)
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Initial <= 0 {
		c.Initial = DefaultInitial
	}
	if c.Max <= 0 {
		c.Max = DefaultMax
	}
	if c.ResetAfter <= 0 {
		c.ResetAfter = DefaultResetAfter
	}
	return c
}

// entry is the state of one key.
type entry struct {
	delay   time.Duration // the current back-off
	started time.Time     // when Next was last called (the restart it let through)
}

// Backoff tracks one delay per key. It never reads the clock: every method takes the
// times it needs. It is safe for concurrent use; the zero value uses the defaults.
type Backoff struct {
	cfg     Config
	mu      sync.Mutex
	entries map[string]entry
}

// New returns a Backoff with cfg (zero fields take the defaults).
func New(cfg Config) *Backoff {
	return &Backoff{cfg: cfg.withDefaults(), entries: map[string]entry{}}
}

// Config returns the effective configuration.
func (b *Backoff) Config() Config { return b.cfg.withDefaults() }

// Key identifies one container of one pod and spec: a spec change (new hash) starts
// with a fresh back-off.
func Key(podUID, containerName, hash string) string {
	return podUID + "/" + containerName + "/" + hash
}

// Until returns when the container identified by key, whose last run finished at
// finishedAt, may be restarted: finishedAt + the current delay, or the zero time when it
// may start at now (no entry yet, the delay has elapsed, or the run lasted ResetAfter or
// more since the restart recorded by Next).
func (b *Backoff) Until(key string, finishedAt, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return time.Time{}
	}
	return b.until(e, finishedAt, now)
}

func (b *Backoff) until(e entry, finishedAt, now time.Time) time.Time {
	if b.expired(e, finishedAt) {
		return time.Time{}
	}
	if until := finishedAt.Add(e.delay); now.Before(until) {
		return until
	}
	return time.Time{}
}

// UntilRecorded is Until measured from the last Next instead of from a finish time:
// for failures recorded when they happen (image pulls: Next(key, failedAt, failedAt)).
func (b *Backoff) UntilRecorded(key string, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return time.Time{}
	}
	return b.until(e, e.started, now)
}

// Next records that the container identified by key, whose last run finished at
// finishedAt, is restarted at now, and returns the delay that will hold back the restart
// after its next exit: Initial for a new key or after a run of ResetAfter or more,
// else twice the current delay, capped at Max.
func (b *Backoff) Next(key string, finishedAt, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	cfg := b.cfg.withDefaults()
	e, ok := b.entries[key]
	if !ok || b.expired(e, finishedAt) {
		e.delay = min(cfg.Initial, cfg.Max)
	} else {
		e.delay = min(2*e.delay, cfg.Max)
	}
	e.started = now
	if b.entries == nil {
		b.entries = map[string]entry{}
	}
	b.entries[key] = e
	return e.delay
}

// Delay returns key's current delay (0 without entry).
func (b *Backoff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries[key].delay
}

// Forget drops key (its container is gone for good, or its spec changed).
func (b *Backoff) Forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC drops the entries keep rejects (keep nil keeps all) and those idle so long that they
// no longer matter: last restarted ResetAfter + Max or more before now (a crash after that
// long a run resets anyway, and any earlier crash's delay has run out). It returns how
// many entries remain.
func (b *Backoff) GC(now time.Time, keep func(key string) bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	cfg := b.cfg.withDefaults()
	for key, e := range b.entries {
		if (keep != nil && !keep(key)) || now.Sub(e.started) >= cfg.ResetAfter+cfg.Max {
			delete(b.entries, key)
		}
	}
	return len(b.entries)
}

// expired reports whether the run that finished at finishedAt lasted ResetAfter or more
// since the restart Next recorded.
func (b *Backoff) expired(e entry, finishedAt time.Time) bool {
	return finishedAt.Sub(e.started) >= b.cfg.withDefaults().ResetAfter
}
