package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// State is where one layer (or the whole image) is in a pull. The values
// are those of the image store's pull events.
type State string

const (
	Waiting     State = "waiting"
	Downloading State = "downloading"
	Unpacking   State = "unpacking"
	Done        State = "done"
	Exists      State = "exists" // the layer was already in the store
	Failed      State = "failed"
)

// terminal reports whether no later event can change a layer in state st.
func (st State) terminal() bool { return st == Done || st == Exists || st == Failed }

// Event is one progress report of a pull.
type Event struct {
	Layer string // layer digest; "" for events about the whole image
	State State
	Done  int64 // compressed bytes of the layer fetched so far
	Total int64 // compressed bytes of the layer; 0 = unknown
}

// Options configure a Renderer.
type Options struct {
	Ref      string           // the image being pulled, named in the header and summary
	Terminal bool             // redraw in place; false: plain lines, no escapes
	Width    func() int       // terminal columns, asked at every draw; nil or ≤ 0 → 80
	Now      func() time.Time // the clock; nil → time.Now
	// Start is when the pull began, for a renderer that joins a pull
	// under way (berth run); zero: at the first event.
	Start time.Time
}

// Renderer turns pull events into text on one writer. It is safe for
// concurrent use.
type Renderer struct {
	out  io.Writer
	opts Options

	mu       sync.Mutex
	start    time.Time
	layers   []*layer // in the order first seen
	byDigest map[string]*layer
	size     int64 // the image's size, from its done event (0 = unknown)
	drawn    int   // lines of the last terminal draw, 0 before the first
	finished bool
	failed   bool // Finish was given an error
}

// layer is what the renderer knows of one layer.
type layer struct {
	digest         string
	state          State
	done, total    int64
	started, ended time.Time // first download/unpack event; terminal event
}

// New returns a renderer writing to out.
func New(out io.Writer, opts Options) *Renderer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Renderer{out: out, opts: opts, byDigest: map[string]*layer{}}
}

// Update records one event. In plain mode it prints a line when a layer
// starts or ends; on a terminal it only records (Tick draws).
func (r *Renderer) Update(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	now := r.opts.Now()
	r.begin(now)
	if ev.Layer == "" {
		if ev.State == Done && ev.Total > 0 {
			r.size = ev.Total
		}
		return
	}
	l := r.byDigest[ev.Layer]
	if l == nil {
		l = &layer{digest: ev.Layer, state: Waiting}
		r.layers = append(r.layers, l)
		r.byDigest[ev.Layer] = l
	}
	if l.state.terminal() {
		return // late events of concurrent workers change nothing
	}
	l.done = max(l.done, ev.Done)
	if ev.Total > 0 {
		l.total = ev.Total
	}
	prev := l.state
	l.state = ev.State
	if (ev.State == Downloading || ev.State == Unpacking) && l.started.IsZero() {
		l.started = now
		r.plainf("%s: %s %s\n", shortDigest(l.digest), ev.State, sizeOrUnknown(l.total))
	}
	if ev.State.terminal() && !prev.terminal() {
		l.ended = now
		if l.started.IsZero() {
			l.started = now
		}
		r.plainf("%s\n", plainEnd(l))
	}
}

// begin notes the first event's time and prints the header.
func (r *Renderer) begin(now time.Time) {
	if !r.start.IsZero() {
		return
	}
	r.start = now
	if !r.opts.Start.IsZero() && r.opts.Start.Before(now) {
		r.start = r.opts.Start
	}
	if r.opts.Ref != "" {
		fmt.Fprintf(r.out, "pulling %s\n", r.opts.Ref)
	}
}

// plainf prints in plain mode only.
func (r *Renderer) plainf(format string, args ...any) {
	if !r.opts.Terminal {
		fmt.Fprintf(r.out, format, args...)
	}
}

// plainEnd is the plain line of a layer that reached a terminal state.
func plainEnd(l *layer) string {
	short := shortDigest(l.digest)
	switch l.state {
	case Exists:
		return short + ": already present"
	case Failed:
		return fmt.Sprintf("%s: failed after %s", short, doneOfTotal(l.done, l.total))
	default:
		return fmt.Sprintf("%s: done, %s in %s", short, FormatBytes(max(l.total, l.done)), FormatDuration(l.ended.Sub(l.started)))
	}
}

// Tick redraws the terminal display; the caller calls it on a ticker (every
// 100 ms gives ~10 redraws a second). It does nothing in plain mode.
func (r *Renderer) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Terminal && !r.finished && !r.start.IsZero() {
		r.draw(r.opts.Now(), false)
	}
}

// Finish ends the display: a last redraw on a terminal, a summary line in
// plain mode. err is the pull's outcome; a pull that failed before any
// layer event prints nothing more. Later calls do nothing.
func (r *Renderer) Finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.finished = true
	r.failed = err != nil
	if r.failed && len(r.layers) == 0 && (!r.opts.Terminal || r.drawn == 0) {
		return // failed before any layer: the error says it all
	}
	now := r.opts.Now()
	r.begin(now)
	if r.opts.Terminal {
		r.draw(now, true)
		return
	}
	t := r.totals(now)
	if len(r.layers) == 0 {
		// The source told only when the pull began and ended.
		fmt.Fprintf(r.out, "pulled %s in %s%s\n", r.refOrImage(), FormatDuration(t.elapsed), r.sizeNote())
		return
	}
	if err != nil {
		fmt.Fprintf(r.out, "pull of %s stopped after %s: %s fetched\n",
			r.refOrImage(), FormatDuration(t.elapsed), doneOfTotal(t.done, t.total))
		return
	}
	fmt.Fprintf(r.out, "pulled %s: %s, %s in %s (%s)\n", r.refOrImage(), r.layerCount(),
		FormatBytes(t.done), FormatDuration(t.elapsed), FormatRate(t.rate))
}

// sizeNote is " (2.1MB)" when the image's size is known.
func (r *Renderer) sizeNote() string {
	if r.size <= 0 {
		return ""
	}
	return " (" + FormatBytes(r.size) + ")"
}

func (r *Renderer) refOrImage() string {
	if r.opts.Ref == "" {
		return "image"
	}
	return r.opts.Ref
}

// layerCount is "3 layers (1 already present)".
func (r *Renderer) layerCount() string {
	present := 0
	for _, l := range r.layers {
		if l.state == Exists {
			present++
		}
	}
	s := fmt.Sprintf("%d layers", len(r.layers))
	if len(r.layers) == 1 {
		s = "1 layer"
	}
	if present > 0 {
		s += fmt.Sprintf(" (%d already present)", present)
	}
	return s
}

// totals sums the layers that are fetched (not those already present).
type totals struct {
	done, total int64 // total 0 = some size still unknown
	elapsed     time.Duration
	rate        float64 // bytes/s since the first event
}

func (r *Renderer) totals(now time.Time) totals {
	var t totals
	known := true
	for _, l := range r.layers {
		if l.state == Exists {
			continue
		}
		t.done += l.done
		t.total += max(l.total, l.done)
		if l.total == 0 && !l.state.terminal() {
			known = false
		}
	}
	if !known {
		t.total = 0
	}
	t.elapsed = now.Sub(r.start)
	if t.elapsed > 0 {
		t.rate = float64(t.done) / t.elapsed.Seconds()
	}
	return t
}

// shortDigest is the first 12 hex digits of a digest.
func shortDigest(d string) string {
	if _, hex, ok := strings.Cut(d, ":"); ok {
		d = hex
	}
	return d[:min(12, len(d))]
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "(size unknown)"
	}
	return FormatBytes(n)
}

// doneOfTotal is "12MB of 40MB", or "12MB" when the total is unknown.
func doneOfTotal(done, total int64) string {
	if total <= 0 {
		return FormatBytes(done)
	}
	return FormatBytes(done) + " of " + FormatBytes(total)
}
