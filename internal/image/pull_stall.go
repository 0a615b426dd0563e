package image

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// progressEvery bounds how often a download reports its bytes.
const (
	progressEveryBytes = 256 << 10
	progressEveryTime  = 100 * time.Millisecond
)

// meteredReader counts the bytes read (for the stall watchdog) and reports
// progress now and then.
type meteredReader struct {
	r        io.Reader
	n        atomic.Int64
	total    int64
	report   func(done int64)
	lastN    int64
	lastTime time.Time
}

func (m *meteredReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	done := m.n.Add(int64(n))
	if m.report != nil && (done-m.lastN >= progressEveryBytes || time.Since(m.lastTime) >= progressEveryTime) {
		m.lastN, m.lastTime = done, time.Now()
		m.report(done)
	}
	return n, err
}

// stallError says a download was too slow.
func stallError(got int64, window time.Duration, min int64) error {
	return fmt.Errorf("download stalled: %d bytes in the last %s, below the minimum throughput of %d bytes/s (registry min_throughput, stall_window): %w",
		got, window, min, errdefs.ErrUnavailable)
}

// watchStall cancels ctx (through cancel, with a stall error as the cause)
// when fewer than min bytes/s were counted over the last window. It stops
// when ctx ends or stop is called.
func watchStall(ctx context.Context, cancel context.CancelCauseFunc, count *atomic.Int64, min int64, window time.Duration) (stop func()) {
	done := make(chan struct{})
	tick := max(window/10, 5*time.Millisecond)
	go func() {
		type sample struct {
			at time.Time
			n  int64
		}
		start := time.Now()
		samples := []sample{{start, 0}}
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				cur := count.Load()
				samples = append(samples, sample{now, cur})
				for len(samples) > 1 && !samples[1].at.After(now.Add(-window)) {
					samples = samples[1:]
				}
				if now.Sub(start) < window {
					continue
				}
				moved := cur - samples[0].n
				if float64(moved) < float64(min)*window.Seconds() {
					cancel(stallError(moved, window, min))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
