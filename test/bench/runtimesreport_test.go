package main

import (
	"strings"
	"testing"
	"time"
)

func cycles(run, create, start, stop, remove time.Duration, n int) latencies {
	var l latencies
	for range n {
		l.cycles = append(l.cycles, cycleTimes{run: run, create: create, start: start, stop: stop, remove: remove})
	}
	return l
}

func TestRuntimeSectionShowsEachRuntimeAndTheRatiosOfThePinnedRunc(t *testing.T) {
	ms := time.Millisecond
	r := runtimeResults{rows: []*runtimeRow{
		{name: "berth, pinned runc", endpoint: "unix:///run/bb-1/berth.sock", runc: "bin/berth-runc (runc version 1.5.3)", l: cycles(50*ms, 30*ms, 10*ms, 90*ms, 10*ms, 3)},
		{name: "berth, system runc", endpoint: "unix:///run/bb-1/berth.sock", handler: "runc-system", l: cycles(50*ms, 40*ms, 20*ms, 90*ms, 10*ms, 3)},
		{name: "containerd 1.6", endpoint: "unix:///run/bb-1/ctrd/containerd.sock", l: cycles(100*ms, 10*ms, 70*ms, 90*ms, 10*ms, 3)},
	}}
	var w strings.Builder
	writeRuntimes(&w, options{runs: 3, runtimes: true}, r)
	out := w.String()
	for _, want := range []string{
		"| berth, system runc | `unix:///run/bb-1/berth.sock` | `runc-system` |",
		"| berth, pinned runc | `unix:///run/bb-1/berth.sock` | (default) |",
		"| **Create + Start** | 40.0 ms / 40.0 ms / 40.0 ms | 60.0 ms / 60.0 ms / 60.0 ms | 80.0 ms / 80.0 ms / 80.0 ms |",
		"| whole cycle (run … remove) | 190.0 ms / 190.0 ms / 190.0 ms |",
		"| **Create + Start** | 0.67× | 0.67× | 0.50× | 0.50× |",
		"| RunPodSandbox | 1.00× | 1.00× | 0.50× | 0.50× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
	w.Reset()
	writeRuntimes(&w, options{runs: 3}, r)
	if w.Len() != 0 {
		t.Errorf("-runtimes=false wrote a section:\n%s", w.String())
	}
}

func TestRuntimeSectionSaysWhyContainerdIsLeftOut(t *testing.T) {
	r := runtimeResults{noContainerd: "/usr/bin/containerd missing", rows: []*runtimeRow{
		{name: "berth, pinned runc", l: cycles(time.Millisecond, 1, 1, 1, 1, 1)},
		{name: "berth, system runc", handler: "runc-system", l: cycles(time.Millisecond, 1, 1, 1, 1, 1)},
	}}
	var w strings.Builder
	writeRuntimes(&w, options{runs: 1, runtimes: true}, r)
	if out := w.String(); !strings.Contains(out, "containerd left out: /usr/bin/containerd missing.") || strings.Contains(out, "/ containerd") {
		t.Errorf("section without containerd:\n%s", out)
	}
}
