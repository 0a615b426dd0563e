package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/progress"
)

// pullDisplay shows, for `berth run`, the image pulls of the pods it
// follows with internal/progress: bars on a terminal, plain lines
// otherwise. One pull is shown at a time (a terminal redraws one block in
// place); the others wait their turn with their latest state, so a pull
// that ended meanwhile is shown at once, ended. A pod whose image was
// present has no pull and shows nothing.
type pullDisplay struct {
	out   io.Writer
	tty   bool
	width func() int
	now   func() time.Time
	// since: pulls that started before berth run are not shown (a pod
	// applied unchanged keeps its old pull).
	since  time.Time
	follow map[string]bool // "namespace/name" of the pods followed

	byImage map[string]*shownPull // the last pull shown of each image
	order   []*shownPull          // first seen first; the first unfinished one is drawn
}

// shownPull is one pull on the display.
type shownPull struct {
	last     agentapi.ImagePull // its latest state
	r        *progress.Renderer // made when its turn comes
	finished bool
	at       time.Time // while feeding a layer: when its state changed
}

func newPullDisplay(out io.Writer, tty bool, width func() int, now func() time.Time, since time.Time, pods []agentapi.ApplyResult) *pullDisplay {
	follow := map[string]bool{}
	for _, p := range pods {
		follow[p.Namespace+"/"+p.Name] = true
	}
	return &pullDisplay{out: out, tty: tty, width: width, now: now, since: since, follow: follow, byImage: map[string]*shownPull{}}
}

// update takes the agent's pulls and draws: a new pull is queued, the one
// drawn gets its new state (on a terminal, a redraw); a pull that ended
// ends its display and lets the next one draw.
func (d *pullDisplay) update(pulls []agentapi.ImagePull) {
	for _, p := range pulls {
		if !d.follow[p.Namespace+"/"+p.Pod] || p.Started.Before(d.since) {
			continue
		}
		s := d.byImage[p.Image]
		switch {
		case s == nil || (s.last.State != agentapi.PullPulling && p.Started.After(s.last.Ended)): // a new pull, or a retry
			s = &shownPull{last: p}
			d.byImage[p.Image] = s
			d.order = append(d.order, s)
		case s.last.PodUID == p.PodUID && s.last.Started.Equal(p.Started):
			s.last = p
		default:
			// Another pod's pull of the same image (the runtime pulls it
			// once), or an older pull: already on the display.
		}
	}
	d.draw()
}

// draw feeds the pulls in order until one is still under way.
func (d *pullDisplay) draw() {
	for _, s := range d.order {
		if s.finished {
			continue
		}
		d.feed(s)
		if !s.finished {
			return
		}
	}
}

// active reports whether a pull is shown under way (nil: none ever is).
func (d *pullDisplay) active() bool {
	if d == nil {
		return false
	}
	for _, s := range d.order {
		if !s.finished {
			return true
		}
	}
	return false
}

// busy reports whether a terminal display is under way: status lines
// written now would break its redraw, so the caller holds them.
func (d *pullDisplay) busy() bool { return d != nil && d.tty && d.active() }

// feed hands a pull's latest state to its renderer, made at its first
// turn, and finishes it when the pull ended.
func (d *pullDisplay) feed(s *shownPull) {
	if s.r == nil {
		s.r = progress.New(d.out, progress.Options{Ref: s.last.Image, Terminal: d.tty, Width: d.width, Now: s.clockOf(d.now), Start: s.last.Started})
		s.r.Update(progress.Event{State: progress.Downloading}) // the header
	}
	p := s.last
	for _, l := range p.Layers {
		s.feedLayer(l)
	}
	switch p.State {
	case agentapi.PullDone:
		s.r.Update(progress.Event{State: progress.Done, Done: p.Size, Total: p.Size})
		s.r.Finish(nil)
		s.finished = true
	case agentapi.PullFailed:
		s.r.Finish(errors.New(p.Error))
		fmt.Fprintf(d.out, "pull of %s failed: %s\n", p.Image, p.Error)
		s.finished = true
	default:
		s.r.Tick()
	}
}

// clockOf is the renderer's clock: while a layer is fed, the time of its
// change as the agent saw it; then the pull's end once it ended; else now.
// So a layer or a pull seen one poll late (or only once ended) keeps its
// own durations.
func (s *shownPull) clockOf(now func() time.Time) func() time.Time {
	return func() time.Time {
		switch {
		case !s.at.IsZero():
			return s.at
		case !s.last.Ended.IsZero():
			return s.last.Ended
		}
		return now()
	}
}

// feedLayer tells the renderer that the layer began (at its start) and,
// when it ended, that it ended (at its end); the renderer keeps the
// first start and the first end it is told.
func (s *shownPull) feedLayer(l agentapi.LayerPull) {
	defer func() { s.at = time.Time{} }()
	ev := progress.Event{Layer: l.Digest, State: progress.State(l.State), Done: l.Done, Total: l.Total}
	if !l.Started.IsZero() {
		s.at = l.Started
		s.r.Update(progress.Event{Layer: l.Digest, State: progress.Downloading, Total: l.Total})
	}
	s.at = l.Ended
	s.r.Update(ev)
}
