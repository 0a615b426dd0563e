package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// runClock is the fake clock of the display tests.
type runClock struct{ now time.Time }

func (c *runClock) Now() time.Time          { return c.now }
func (c *runClock) advance(d time.Duration) { c.now = c.now.Add(d) }

var runStart = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

func followed(names ...string) []agentapi.ApplyResult {
	var out []agentapi.ApplyResult
	for _, n := range names {
		out = append(out, agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: "default", Name: n})
	}
	return out
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// detailedPull is web's pull of app:1 at a moment: layer a (4 MB)
// downloading aDone bytes, layer b present.
func detailedPull(state string, aState string, aDone int64, ended time.Time) agentapi.ImagePull {
	var aEnded time.Time
	if aState == "done" {
		aEnded = ended.Add(-100 * time.Millisecond)
	}
	return agentapi.ImagePull{
		Namespace: "default", Pod: "web", PodUID: "u1", Image: "registry.test/app:1", State: state, Detailed: true,
		Layers: []agentapi.LayerPull{
			{Digest: digest('a'), State: aState, Done: aDone, Total: 4_000_000, Started: runStart.Add(200 * time.Millisecond), Ended: aEnded},
			{Digest: digest('b'), State: "exists", Done: 1000, Total: 1000},
		},
		Started: runStart.Add(100 * time.Millisecond), Ended: ended,
	}
}

func TestRunShowsDetailedPullInPlainLines(t *testing.T) {
	clock := &runClock{now: runStart}
	var out bytes.Buffer
	d := newPullDisplay(&out, false, nil, clock.Now, runStart, followed("web"))
	d.update(nil) // the fast path: nothing pulled, nothing shown
	if out.Len() != 0 {
		t.Fatalf("no pull printed %q", out.String())
	}
	clock.advance(time.Second)
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullPulling, "downloading", 1_000_000, time.Time{})})
	if !d.active() {
		t.Error("a pull under way is not active")
	}
	clock.advance(time.Second)
	ended := runStart.Add(2100 * time.Millisecond)
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullDone, "done", 4_000_000, ended)})
	clock.advance(time.Second)
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullDone, "done", 4_000_000, ended)}) // shown once
	want := "pulling registry.test/app:1\n" +
		"aaaaaaaaaaaa: downloading 4MB\n" +
		"bbbbbbbbbbbb: already present\n" +
		"aaaaaaaaaaaa: done, 4MB in 1.8s\n" +
		"pulled registry.test/app:1: 2 layers (1 already present), 4MB in 2.0s (2MB/s)\n"
	if got := out.String(); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	if d.active() || d.busy() {
		t.Error("an ended pull is still active")
	}
}

// Over another CRI runtime the pull says when it began and ended, and the
// image's size; a failure says why.
func TestRunShowsUndetailedPullAndFailure(t *testing.T) {
	clock := &runClock{now: runStart}
	var out bytes.Buffer
	d := newPullDisplay(&out, false, nil, clock.Now, runStart, followed("web", "db"))
	pull := agentapi.ImagePull{Namespace: "default", Pod: "web", PodUID: "u1", Image: "busybox", State: agentapi.PullPulling, Started: runStart}
	failing := agentapi.ImagePull{Namespace: "default", Pod: "db", PodUID: "u2", Image: "absent:1", State: agentapi.PullPulling, Started: runStart}
	d.update([]agentapi.ImagePull{pull, failing})
	pull.State, pull.Ended, pull.Size = agentapi.PullDone, runStart.Add(1500*time.Millisecond), 2_100_000
	failing.State, failing.Ended, failing.Error = agentapi.PullFailed, runStart.Add(time.Second), "manifest unknown"
	clock.advance(2 * time.Second)
	d.update([]agentapi.ImagePull{pull, failing})
	want := "pulling busybox\npulled busybox in 1.5s (2.1MB)\npulling absent:1\npull of absent:1 failed: manifest unknown\n"
	if got := out.String(); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	// The retry after the back-off is a new pull.
	failing.State, failing.Started, failing.Ended, failing.Error = agentapi.PullPulling, runStart.Add(11*time.Second), time.Time{}, ""
	d.update([]agentapi.ImagePull{pull, failing})
	if got := strings.Count(out.String(), "pulling absent:1"); got != 2 {
		t.Errorf("the retried pull was shown %d times, want 2:\n%s", got, out.String())
	}
}

// Pulls of pods not followed, pulls from before berth run, and a second
// pod's pull of an image already shown print nothing.
func TestRunShowsOnlyItsPodsNewPullsOnce(t *testing.T) {
	clock := &runClock{now: runStart}
	var out bytes.Buffer
	d := newPullDisplay(&out, false, nil, clock.Now, runStart, followed("web", "web2"))
	mine := agentapi.ImagePull{Namespace: "default", Pod: "web", PodUID: "u1", Image: "app", State: agentapi.PullPulling, Started: runStart.Add(time.Millisecond)}
	sharing := mine
	sharing.Pod, sharing.PodUID = "web2", "u3"
	other := mine
	other.Pod, other.PodUID, other.Image = "other", "u9", "other"
	old := mine
	old.Image, old.Started = "old", runStart.Add(-time.Minute)
	d.update([]agentapi.ImagePull{mine, sharing, other, old})
	if got := out.String(); got != "pulling app\n" {
		t.Errorf("output %q; want only web's pull of app", got)
	}
}

// A pull first seen ended still shows each layer's own time.
func TestRunShowsLayerTimesOfAPullSeenEnded(t *testing.T) {
	clock := &runClock{now: runStart.Add(5 * time.Second)}
	var out bytes.Buffer
	d := newPullDisplay(&out, false, nil, clock.Now, runStart, followed("web"))
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullDone, "done", 4_000_000, runStart.Add(2100*time.Millisecond))})
	want := "pulling registry.test/app:1\n" +
		"aaaaaaaaaaaa: downloading 4MB\n" +
		"aaaaaaaaaaaa: done, 4MB in 1.8s\n" +
		"bbbbbbbbbbbb: already present\n" +
		"pulled registry.test/app:1: 2 layers (1 already present), 4MB in 2.0s (2MB/s)\n"
	if got := out.String(); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
}

// On a terminal the pull is drawn in place, and held status lines wait
// until it ended.
func TestRunDrawsPullOnTerminal(t *testing.T) {
	clock := &runClock{now: runStart}
	var out bytes.Buffer
	d := newPullDisplay(&out, true, func() int { return 100 }, clock.Now, runStart, followed("web"))
	clock.advance(time.Second)
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullPulling, "downloading", 1_000_000, time.Time{})})
	if !d.busy() || !strings.Contains(out.String(), "\x1b[K") || !strings.Contains(out.String(), "downloading") {
		t.Errorf("busy %v, output %q; want a drawn bar", d.busy(), out.String())
	}
	ended := runStart.Add(2100 * time.Millisecond)
	d.update([]agentapi.ImagePull{detailedPull(agentapi.PullDone, "done", 4_000_000, ended)})
	if d.busy() {
		t.Error("busy after the pull ended")
	}
	if !strings.Contains(out.String(), "4MB in 2.0s (2MB/s)") {
		t.Errorf("final draw lacks the total: %q", out.String())
	}
}
