package image

import (
	"context"
	"sync"
	"time"
)

// leaveWait bounds how long the last caller to leave a flight waits for
// it to stop and clean its staging up.
const leaveWait = 10 * time.Second

// flightGroup runs one call per key at a time and shares its result with
// every caller that asks for the key meanwhile. The call runs under its
// own context, cancelled when every caller waiting on it has given up.
// A finished call stays joinable until its last caller releases it, so a
// late caller reuses the result instead of repeating the work.
type flightGroup[T any] struct {
	mu      sync.Mutex
	flights map[string]*flight[T]
}

type flight[T any] struct {
	done    chan struct{}
	val     T
	err     error
	refs    int
	cancel  context.CancelFunc
	hub     progressHub
	cleanup func(T) // runs once the last caller released a finished call
}

// join returns the flight for key, starting run in a new goroutine when
// there is none. The caller must call leave exactly once.
func (g *flightGroup[T]) join(key string, run func(ctx context.Context, f *flight[T]) (T, error), cleanup func(T)) *flight[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.flights[key]; ok {
		f.refs++
		return f
	}
	if g.flights == nil {
		g.flights = map[string]*flight[T]{}
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:gosec // G118: the flight keeps cancel; the last caller to leave calls it
	f := &flight[T]{done: make(chan struct{}), refs: 1, cancel: cancel, cleanup: cleanup}
	g.flights[key] = f
	go func() {
		v, err := run(ctx, f)
		g.mu.Lock()
		f.val, f.err = v, err
		if err != nil && g.flights[key] == f {
			delete(g.flights, key) // a failure is not shared with later callers
		}
		g.mu.Unlock()
		close(f.done)
	}()
	return f
}

// wait blocks until the flight finished or ctx ended.
func (f *flight[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// leave drops the caller's reference: the last one cancels an unfinished
// call, or cleans a finished one up and forgets it, and waits (at most
// leaveWait) until the call has returned and the cleanup has run, so that
// a pull that returns leaves no staging behind.
func (g *flightGroup[T]) leave(key string, f *flight[T]) {
	g.mu.Lock()
	f.refs--
	last := f.refs == 0
	if last && g.flights[key] == f {
		delete(g.flights, key)
	}
	g.mu.Unlock()
	if !last {
		return
	}
	f.cancel()
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		<-f.done
		if f.err == nil && f.cleanup != nil {
			f.cleanup(f.val)
		}
	}()
	timer := time.NewTimer(leaveWait)
	defer timer.Stop()
	select {
	case <-cleaned:
	case <-timer.C:
	}
}

// progressHub fans progress events out to the callers of a flight. It
// keeps the latest event of each layer (and of the image) and replays them
// to a new subscriber, so that one who joins after the flight started
// (the first caller included) misses no state.
type progressHub struct {
	mu    sync.Mutex
	next  int
	subs  map[int]func(PullProgress)
	last  map[string]PullProgress // by layer digest; "" the image
	order []string                // keys of last, first seen first
}

func (h *progressHub) subscribe(fn func(PullProgress)) (unsubscribe func()) {
	if fn == nil {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[int]func(PullProgress){}
	}
	id := h.next
	h.next++
	h.subs[id] = fn
	for _, layer := range h.order {
		fn(h.last[layer])
	}
	return func() {
		h.mu.Lock()
		delete(h.subs, id)
		h.mu.Unlock()
	}
}

func (h *progressHub) emit(p PullProgress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]PullProgress{}
	}
	if _, seen := h.last[p.Layer]; !seen {
		h.order = append(h.order, p.Layer)
	}
	h.last[p.Layer] = p
	for _, fn := range h.subs {
		fn(p)
	}
}
