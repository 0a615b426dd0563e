package pulltrack

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
)

func newClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC))
}

func only(t *testing.T, ps *Pulls) agentapi.ImagePull {
	t.Helper()
	list := ps.List()
	if len(list) != 1 {
		t.Fatalf("%d pulls listed, want 1: %+v", len(list), list)
	}
	return list[0]
}

// Layers and bytes add up from events that come late, twice and out of
// order; a present layer counts as done but adds no bytes; the rate is
// bytes over the time since the start.
func TestAggregatesLayerEvents(t *testing.T) {
	clk := newClock()
	ps := New(clk)
	p := ps.Start("registry.test/app:1")
	p.Detailed()
	for _, ev := range []criclient.PullEvent{
		{State: "downloading", Total: 9000}, // the image: left to End
		{Layer: "sha256:a", State: "waiting", Total: 4000},
		{Layer: "sha256:b", State: "exists", Done: 1000, Total: 1000},
		{Layer: "sha256:c", State: "downloading"}, // size unknown yet
		{Layer: "sha256:a", State: "downloading", Done: 3000, Total: 4000},
		{Layer: "sha256:a", State: "downloading", Done: 1000, Total: 4000}, // late: smaller
		{Layer: "sha256:b", State: "downloading", Done: 0, Total: 1000},    // late: after its end
	} {
		p.Event(ev)
	}
	clk.Step(2 * time.Second)
	got := only(t, ps)
	if got.State != agentapi.PullPulling || !got.Detailed || got.LayersTotal != 3 || got.LayersDone != 1 {
		t.Errorf("pull %+v: want pulling, detailed, 1 of 3 layers done", got)
	}
	if got.BytesDone != 3000 || got.BytesTotal != 0 {
		t.Errorf("bytes %d of %d; want 3000 of unknown (layer c has no size yet)", got.BytesDone, got.BytesTotal)
	}
	if got.Rate != 1500 {
		t.Errorf("rate %v, want 1500 B/s", got.Rate)
	}
	if got.Layers[1].State != "exists" || got.Layers[0].Done != 3000 {
		t.Errorf("layers %+v: b stays present, a keeps its 3000 bytes", got.Layers)
	}
	if a := got.Layers[0]; !a.Started.Equal(got.Started) || !a.Ended.IsZero() {
		t.Errorf("layer a began %v, ended %v; want at the pull's start, not ended", a.Started, a.Ended)
	}
	if b := got.Layers[1]; !b.Started.IsZero() || !b.Ended.Equal(got.Started) {
		t.Errorf("present layer b began %v, ended %v; want never begun, ended at once", b.Started, b.Ended)
	}
	p.Event(criclient.PullEvent{Layer: "sha256:c", State: "done", Done: 2000, Total: 2000})
	p.Event(criclient.PullEvent{Layer: "sha256:a", State: "done", Done: 4000, Total: 4000})
	clk.Step(time.Second)
	p.End(nil, 7500)
	clk.Step(time.Hour) // an ended pull's rate no longer moves
	p.Event(criclient.PullEvent{Layer: "sha256:d", State: "downloading", Done: 5})
	got = only(t, ps)
	if got.State != agentapi.PullDone || got.LayersDone != 3 || got.BytesDone != 6000 || got.BytesTotal != 6000 || got.Size != 7500 {
		t.Errorf("ended pull %+v: want done, 3 layers, 6000 of 6000 bytes, size 7500", got)
	}
	if a := got.Layers[0]; a.Ended.Sub(a.Started) != 2*time.Second {
		t.Errorf("layer a took %v, want 2s", a.Ended.Sub(a.Started))
	}
	if got.Rate != 2000 || !got.Ended.Equal(got.Started.Add(3*time.Second)) {
		t.Errorf("ended pull: rate %v over %v; want 2000 B/s over 3s", got.Rate, got.Ended.Sub(got.Started))
	}
}

// Without a watcher the pull says only when it started and ended.
func TestUndetailedPullClaimsNoBytes(t *testing.T) {
	clk := newClock()
	ps := New(clk)
	p := ps.Start("busybox")
	clk.Step(time.Second)
	if got := only(t, ps); got.Detailed || got.BytesDone != 0 || got.Rate != 0 || !got.Ended.IsZero() {
		t.Errorf("running pull %+v: want undetailed, no bytes, not ended", got)
	}
	p.End(errors.New("manifest unknown"), 0)
	p.End(nil, 100) // too late
	got := only(t, ps)
	if got.State != agentapi.PullFailed || got.Error != "manifest unknown" || got.Size != 0 || got.Ended.Sub(got.Started) != time.Second {
		t.Errorf("failed pull %+v", got)
	}
}

// A new pull of an image replaces its last one, in its place.
func TestRetryReplacesTheLastPull(t *testing.T) {
	clk := newClock()
	ps := New(clk)
	first := ps.Start("a")
	first.End(errors.New("unreachable"), 0)
	ps.Start("b")
	clk.Step(10 * time.Second)
	ps.Start("a")
	first.Event(criclient.PullEvent{Layer: "sha256:x", State: "downloading", Done: 1})
	list := ps.List()
	if len(list) != 2 || list[0].Image != "a" || list[1].Image != "b" {
		t.Fatalf("pulls %+v; want a then b", list)
	}
	if list[0].State != agentapi.PullPulling || list[0].LayersTotal != 0 || !list[0].Started.Equal(clk.Now()) {
		t.Errorf("retried pull %+v: want the new one, untouched by the old one's events", list[0])
	}
}
