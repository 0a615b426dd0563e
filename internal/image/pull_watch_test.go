package image

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder collects progress events from several goroutines.
type recorder struct {
	mu     sync.Mutex
	events []PullProgress
	seen   chan struct{} // closed at the first layer event
	once   sync.Once
}

func newRecorder() *recorder { return &recorder{seen: make(chan struct{})} }

func (r *recorder) record(p PullProgress) {
	r.mu.Lock()
	r.events = append(r.events, p)
	r.mu.Unlock()
	if p.Layer != "" {
		r.once.Do(func() { close(r.seen) })
	}
}

func (r *recorder) list() []PullProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]PullProgress(nil), r.events...)
}

// A watcher sees the pulls others ask for (CRI PullImage passes no
// Progress), of its reference only.
func TestWatchPullsSeesPullsOfOthers(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 2)
	ref := reg.push(t, "watched", "1", img)
	other := reg.push(t, "other", "1", hostImage(t, 1))
	s, _ := newPullStore(t, PullConfig{})
	watched, unrelated := newRecorder(), newRecorder()
	stop, err := s.WatchPulls(ref, watched.record)
	if err != nil {
		t.Fatal(err)
	}
	stopOther, err := s.WatchPulls(other+"-absent", unrelated.record)
	if err != nil {
		t.Fatal(err)
	}
	defer stopOther()
	if _, err := pull(t, s, ref, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pull(t, s, other, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	checkProgress(t, watched.list(), layerDigests(t, img), PullDone)
	if n := len(unrelated.list()); n != 0 {
		t.Errorf("a watcher of another reference saw %d events", n)
	}
	stop()
	before := len(watched.list())
	if _, err := pull(t, s, ref, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := len(watched.list()); after != before {
		t.Errorf("a stopped watcher saw %d more events", after-before)
	}
	if _, err := s.WatchPulls("Not A Reference", func(PullProgress) {}); err == nil {
		t.Error("WatchPulls of a bad reference: no error")
	}
}

// A watcher that comes while a pull runs first gets its latest state.
func TestWatchPullsReplaysARunningPull(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "running", "1", img)
	layer := layerDigests(t, img)[0]
	block := make(chan struct{})
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/blobs/"+layer) {
				select {
				case <-block:
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	s, _ := newPullStore(t, PullConfig{})
	early := newRecorder()
	stop, err := s.WatchPulls(ref, early.record)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pulled := make(chan error, 1)
	go func() { _, err := pull(t, s, ref, PullOptions{}); pulled <- err }()
	select {
	case <-early.seen:
	case <-time.After(20 * time.Second):
		close(block)
		t.Fatal("no layer event while the blob download blocks")
	}
	late := newRecorder()
	stopLate, err := s.WatchPulls(ref, late.record)
	if err != nil {
		t.Fatal(err)
	}
	defer stopLate()
	replayed := late.list()
	close(block)
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range replayed {
		found = found || (p.Layer == layer && p.Total > 0)
	}
	if !found {
		t.Errorf("a late watcher got %+v at once; want the running layer %s with its size", replayed, layer)
	}
	checkProgress(t, late.list(), []string{layer}, PullDone)
}
