package image

import (
	"strings"
	"sync"
)

// pullWatchers are the store-wide observers of pulls, by normalized
// reference: whoever asked a pull of this process (CRI PullImage, berth
// pull) need not be the one watching it (the node agent in berth serve).
type pullWatchers struct {
	mu    sync.Mutex
	next  int
	byRef map[string]map[int]func(PullProgress)
}

// emit hands p to the watchers of ref.
func (w *pullWatchers) emit(ref string, p PullProgress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fn := range w.byRef[ref] {
		fn(p)
	}
}

// add registers fn for ref; remove undoes it.
func (w *pullWatchers) add(ref string, fn func(PullProgress)) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byRef == nil {
		w.byRef = map[string]map[int]func(PullProgress){}
	}
	if w.byRef[ref] == nil {
		w.byRef[ref] = map[int]func(PullProgress){}
	}
	id := w.next
	w.next++
	w.byRef[ref][id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.byRef[ref], id)
		if len(w.byRef[ref]) == 0 {
			delete(w.byRef, ref)
		}
	}
}

// WatchPulls calls fn with the progress events of every pull of ref that
// this process makes, whoever asked for it, until stop is called: the
// pulls starting later, and those running now (their latest state first).
// fn is called from the pull's goroutines, with the watchers' lock held:
// it must be cheap and must not call back into the store. ref is
// normalized as Pull normalizes it.
func (s *Store) WatchPulls(ref string, fn func(PullProgress)) (stop func(), err error) {
	normalized, err := NormalizeRef(ref)
	if err != nil {
		return nil, err
	}
	remove := s.pull.watchers.add(normalized, fn)
	for _, p := range s.pull.images.runningProgress(normalized + "\x00") {
		fn(p) // may repeat an event the watcher just saw; states only move forward
	}
	return remove, nil
}

// runningProgress is the latest progress of every flight whose key starts
// with prefix.
func (g *flightGroup[T]) runningProgress(prefix string) []PullProgress {
	g.mu.Lock()
	var hubs []*progressHub
	for key, f := range g.flights {
		if strings.HasPrefix(key, prefix) {
			hubs = append(hubs, &f.hub)
		}
	}
	g.mu.Unlock()
	var out []PullProgress
	for _, h := range hubs {
		out = append(out, h.snapshot()...)
	}
	return out
}

// snapshot is the latest event of each layer (and of the image), first
// seen first.
func (h *progressHub) snapshot() []PullProgress {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PullProgress, 0, len(h.order))
	for _, key := range h.order {
		out = append(out, h.last[key])
	}
	return out
}
