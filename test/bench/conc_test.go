package main

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSummarizeInterpolatesP50P90P99BetweenRanks(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, unsorted
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := summarize(d)
	if s.P50 != 50500*time.Microsecond || s.P90 != 90100*time.Microsecond || s.P99 != 99010*time.Microsecond {
		t.Errorf("p50/p90/p99 = %v / %v / %v, want 50.5ms / 90.1ms / 99.01ms", s.P50, s.P90, s.P99)
	}
	if one := summarize([]time.Duration{7}); one.P99 != 7 || one.P50 != 7 {
		t.Errorf("one value: %+v", one)
	}
}

func TestRatioAgainstTheBetterContainerdValueByValue(t *testing.T) {
	if got := betterOf(0, 120, 90); got != 90 {
		t.Errorf("betterOf = %v, want 90 (0 is no value)", got)
	}
	berth := []float64{50, 100, 200}
	c16, c24 := []float64{100, 400, 250}, []float64{125, 200, 500}
	if got := ratioCell(berth, c16, c24); got != "0.50 / 0.50 / 0.80" {
		t.Errorf("ratio to the better = %q", got)
	}
	if got := ratioCell(berth, nil, c24); got != "0.40 / 0.50 / 0.40" {
		t.Errorf("ratio with 1.6 missing = %q", got)
	}
	if got := ratioCell(nil, c16); got != "–" {
		t.Errorf("ratio without berth = %q", got)
	}
	cells := ratioCells([][]float64{berth, c16, c24}, false)
	want := []string{"0.50 / 0.50 / 0.80", "0.50 / 0.25 / 0.80", "0.40 / 0.50 / 0.40"}
	if strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Errorf("ratio cells = %q, want %q", cells, want)
	}
	if cells := ratioCells([][]float64{berth, c16, nil}, false); cells[2] != "–" {
		t.Errorf("a runtime without the phase has a ratio: %q", cells)
	}
}

// concPhaseOf is a phase whose every call took d, with n pods.
func concPhaseOf(k, n int, d time.Duration, pss int64) *concPhase {
	p := &concPhase{k: k, n: n}
	for range n {
		p.run, p.createStart, p.podStart = append(p.run, d), append(p.createStart, d), append(p.podStart, 2*d)
		p.stop, p.remove = append(p.stop, d), append(p.remove, d)
	}
	p.starts = meter{wall: time.Duration(n) * d, busy: time.Duration(n) * d, forks: uint64(10 * n)}
	p.teardown = meter{wall: time.Duration(n) * d, busy: time.Duration(n) * d / 2, forks: uint64(5 * n)}
	p.memAllUp = podMemory{pods: n, procs: n, pssKiB: pss * int64(n), daemonRSS: 40000}
	p.memEarly = podMemory{pods: 20, procs: 20, pssKiB: pss * 20, daemonRSS: 39000}
	return p
}

func TestConcurrencySectionShowsEachRuntimeKAndRatios(t *testing.T) {
	ms := time.Millisecond
	r := concResults{pods: 60, ks: intList{1, 10}, loadBefore: "0.10", loadAfter: "0.50", rows: []*concRuntime{
		{name: "berth", cni: "`bb1`", phases: []*concPhase{concPhaseOf(1, 60, 50*ms, 1000), concPhaseOf(10, 60, 40*ms, 1000)}},
		{name: "containerd 1.6", phases: []*concPhase{concPhaseOf(1, 60, 100*ms, 4000), concPhaseOf(10, 60, 80*ms, 4000)}},
		{name: "containerd 2.4", skipped: "bin/containerd2/containerd missing"},
	}}
	var w strings.Builder
	writeConcurrency(&w, r)
	out := w.String()
	for _, want := range []string{
		"## 7. Concurrency: 60 pods from one CRI client per runtime, 1,10 in flight",
		"| containerd 2.4 | – | – | – | no: bin/containerd2/containerd missing |",
		"### 60 pods, 10 in flight",
		"| starts: wall | 2.40 s | 4.80 s | – | 0.50 | 0.50 | – |",
		"| **pod start** (Run … Start) p50 / p90 / p99 | 80 / 80 / 80 | 160 / 160 / 160 | – | 0.50 / 0.50 / 0.50 | 0.50 / 0.50 / 0.50 | – |",
		"| CPU-ms per pod: start / teardown (machine-wide) | 40.0 / 20.0 | 80.0 / 40.0 | – | 0.50 / 0.50 |",
		"| processes forked per pod: start / teardown | 10.0 / 5.0 | 10.0 / 5.0 | – | 1.00 / 1.00 |",
		"| PSS per pod, 20 pods up | 1000 KiB | 4000 KiB | – | 0.25 | 0.25 | – |",
		"| starts: pods/s | 20.0 | 10.0 | – | – | – | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
}

func TestAFailedPhaseShowsNoFigures(t *testing.T) {
	p := concPhaseOf(10, 60, time.Millisecond, 1000)
	p.failed = "RunPodSandbox: deadline exceeded"
	row := &concRuntime{name: "containerd 2.4", phases: []*concPhase{concPhaseOf(1, 60, time.Millisecond, 1000), p}, skipped: "the phase with 10 in flight failed"}
	if row.phase(10) != nil || row.phase(1) == nil {
		t.Errorf("phase(10) = %v, phase(1) = %v; want the failed phase hidden", row.phase(10), row.phase(1))
	}
	var w strings.Builder
	writeConcRuntimes(&w, concResults{rows: []*concRuntime{row}})
	if !strings.Contains(w.String(), "1 phase(s), then no: the phase with 10 in flight failed") {
		t.Errorf("runtime table:\n%s", w.String())
	}
}

func TestParseHostStatCountsBusyTicksAndForks(t *testing.T) {
	text := "cpu  100 5 50 1000 70 3 2 1 9 9\ncpu0 50 2 25 500 35 1 1 0 0 0\nintr 1\nctxt 2\nprocesses 4242\n"
	s, err := parseHostStat(text)
	if err != nil {
		t.Fatal(err)
	}
	if s.busyTicks != 100+5+50+3+2+1 || s.forks != 4242 {
		t.Errorf("parsed %+v, want busy 161 (no idle, iowait, guest) and forks 4242", s)
	}
	if _, err := parseHostStat("cpu 1 2 3\n"); err == nil {
		t.Error("no processes line: no error")
	}
}

func TestSelectPodProcsTakesTheDaemonsHoldersAndTheirHelpers(t *testing.T) {
	procs := []proc{
		{pid: 10, ppid: 1, comm: "containerd-shim", cmdline: "containerd-shim-runc-v2 -namespace k8s.io -id a -address /run/bb-1/cc16/containerd.sock"},
		{pid: 11, ppid: 10, comm: "pause", cmdline: "/pause"},
		{pid: 12, ppid: 10, comm: "sleep", cmdline: "sleep 3600"},
		{pid: 20, ppid: 1, comm: "containerd-shim", cmdline: "containerd-shim-runc-v2 -address /run/containerd/containerd.sock"},
		{pid: 21, ppid: 20, comm: "pause", cmdline: "/pause"},
	}
	s := podProcSelector{holderComm: "containerd-shim", holderArg: "/run/bb-1/cc16/containerd.sock", helperComms: []string{"pause"}}
	var pids []int
	for _, p := range s.selectPodProcs(procs) {
		pids = append(pids, p.pid)
	}
	if len(pids) != 2 || pids[0] != 10 || pids[1] != 11 {
		t.Errorf("selected %v, want [10 11]: this run's shim and its pause, not the container nor another containerd's", pids)
	}
	if comm, rest, ok := parseStat("42 (a b) c) S 7 42"); !ok || comm != "a b) c" || rest[1] != "7" {
		t.Errorf("parseStat: %q %q %v", comm, rest, ok)
	}
}

func TestInFlightKeepsAtMostKCallsRunning(t *testing.T) {
	var mu sync.Mutex
	running, most, done := 0, 0, map[int]bool{}
	err := inFlight(5, 65, 10, true, func(i int) error {
		mu.Lock()
		running++
		most = max(most, running)
		done[i] = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	if err != nil || most > 10 || most < 2 || len(done) != 60 || done[4] || !done[64] {
		t.Errorf("err %v, at most %d in flight, %d calls", err, most, len(done))
	}
}

func TestIntListFlag(t *testing.T) {
	var l intList
	if err := l.Set("1, 10,50"); err != nil || l.String() != "1,10,50" {
		t.Errorf("Set: %v, %q", err, l.String())
	}
	if err := l.Set("1,0"); err == nil {
		t.Error("0 accepted")
	}
}

func TestParseCounterFindsTheUnlabelledSample(t *testing.T) {
	text := "# HELP berth_store_fsyncs_total x\n# TYPE berth_store_fsyncs_total counter\nberth_store_fsyncs_total_other 3\nberth_store_fsyncs_total 42\n"
	n, err := parseCounter(bufio.NewScanner(strings.NewReader(text)), fsyncsMetric)
	if err != nil || n != 42 {
		t.Errorf("parseCounter = %d, %v; want 42", n, err)
	}
	if _, err := parseCounter(bufio.NewScanner(strings.NewReader("up 1\n")), fsyncsMetric); err == nil {
		t.Error("parseCounter without the metric: no error")
	}
}

func TestMedianCountPicksTheMiddleCycle(t *testing.T) {
	l := latencies{cycles: []cycleTimes{{fsyncs: [5]uint64{7}}, {fsyncs: [5]uint64{3}}, {fsyncs: [5]uint64{5}, forks: [5]uint64{0, 9}}}}
	if got := l.medianCount(0, true); got != 5 {
		t.Errorf("median fsyncs of RunPodSandbox = %d, want 5", got)
	}
	if got := l.medianCount(1, false); got != 0 {
		t.Errorf("median forks of CreateContainer = %d, want 0", got)
	}
	if got := (latencies{}).medianCount(0, true); got != 0 {
		t.Errorf("median of no cycles = %d", got)
	}
}
