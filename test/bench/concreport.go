package main

import (
	"fmt"
	"strings"
	"time"
)

// concMeasure is one row of a concurrency table: one or more values per
// phase (p50 / p90 / p99, or start / teardown), lower is better unless
// noRatio says the row has no ratio (a rate).
type concMeasure struct {
	name    string
	vals    func(*concPhase) []float64
	format  func(float64) string
	noRatio bool
}

// msOf is a duration in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pcts is p50, p90 and p99 of d in milliseconds.
func pcts(d []time.Duration) []float64 {
	s := summarize(d)
	return []float64{msOf(s.P50), msOf(s.P90), msOf(s.P99)}
}

// perPod divides each of vs by the phase's pods.
func perPod(ph *concPhase, vs ...float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v / float64(ph.n)
	}
	return out
}

// concMeasures are the rows of each K's table.
var concMeasures = []concMeasure{
	{"starts: wall", func(p *concPhase) []float64 { return []float64{msOf(p.starts.wall) / 1000} }, fmtSeconds, false},
	{"starts: pods/s", func(p *concPhase) []float64 {
		return []float64{float64(p.n) / p.starts.wall.Seconds()}
	}, fmtRate, true},
	{"RunPodSandbox p50 / p90 / p99", func(p *concPhase) []float64 { return pcts(p.run) }, fmtMs, false},
	{"Create + Start p50 / p90 / p99", func(p *concPhase) []float64 { return pcts(p.createStart) }, fmtMs, false},
	{"**pod start** (Run … Start) p50 / p90 / p99", func(p *concPhase) []float64 { return pcts(p.podStart) }, fmtMs, false},
	{"teardown: wall", func(p *concPhase) []float64 { return []float64{msOf(p.teardown.wall) / 1000} }, fmtSeconds, false},
	{"StopPodSandbox p50 / p90 / p99", func(p *concPhase) []float64 { return pcts(p.stop) }, fmtMs, false},
	{"RemovePodSandbox p50 / p90 / p99", func(p *concPhase) []float64 { return pcts(p.remove) }, fmtMs, false},
	{"CPU-ms per pod: start / teardown (machine-wide)", func(p *concPhase) []float64 {
		return perPod(p, msOf(p.starts.busy), msOf(p.teardown.busy))
	}, fmtCount, false},
	{"processes forked per pod: start / teardown", func(p *concPhase) []float64 {
		return perPod(p, float64(p.starts.forks), float64(p.teardown.forks))
	}, fmtCount, false},
	{"store fsyncs per pod: start / teardown (berth_store_fsyncs_total)", func(p *concPhase) []float64 {
		if p.starts.count == nil {
			return nil // containerd: no counter
		}
		return perPod(p, float64(p.starts.fsyncs), float64(p.teardown.fsyncs))
	}, fmtCount, true},
}

// fmtSeconds, fmtMs, fmtRate, fmtCount and fmtKiB format one value.
func fmtSeconds(v float64) string { return fmt.Sprintf("%.2f s", v) }
func fmtMs(v float64) string      { return fmt.Sprintf("%.0f", v) }
func fmtRate(v float64) string    { return fmt.Sprintf("%.1f", v) }
func fmtCount(v float64) string   { return fmt.Sprintf("%.1f", v) }
func fmtKiB(v float64) string     { return fmt.Sprintf("%.0f KiB", v) }

// phase is the runtime's phase with k in flight that completed, or nil.
func (row *concRuntime) phase(k int) *concPhase {
	for _, p := range row.phases {
		if p.k == k && p.failed == "" {
			return p
		}
	}
	return nil
}

// betterOf is the lowest positive value of vs (the better containerd on a
// lower-is-better measure), or 0 when none is positive.
func betterOf(vs ...float64) float64 {
	var best float64
	for _, v := range vs {
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	return best
}

// ratioCell is berth's values over the others' value by value: over the
// better (lowest) of the others at each position. "–" where either side
// has nothing.
func ratioCell(berth []float64, others ...[]float64) string {
	if berth == nil {
		return "–"
	}
	parts := make([]string, len(berth))
	for j, b := range berth {
		var at []float64
		for _, o := range others {
			if j < len(o) {
				at = append(at, o[j])
			}
		}
		best := betterOf(at...)
		if b <= 0 || best <= 0 {
			parts[j] = "–"
			continue
		}
		parts[j] = fmt.Sprintf("%.2f", b/best)
	}
	return strings.Join(parts, " / ")
}

// valueCell formats a runtime's values, "–" without a phase.
func valueCell(vs []float64, format func(float64) string) string {
	if vs == nil {
		return "–"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = format(v)
	}
	return strings.Join(parts, " / ")
}

// rowValues are m's values for each runtime's phase with k in flight (nil
// for a runtime without that phase).
func rowValues(rows []*concRuntime, k int, m concMeasure) [][]float64 {
	out := make([][]float64, len(rows))
	for i, row := range rows {
		if p := row.phase(k); p != nil {
			out[i] = m.vals(p)
		}
	}
	return out
}

// ratioHeads are the ratio columns: berth over the better of the others,
// then over each (only when there are two or more others).
func ratioHeads(rows []*concRuntime) []string {
	if len(rows) < 2 {
		return nil
	}
	heads := []string{"berth / better containerd"}
	if len(rows) > 2 {
		for _, o := range rows[1:] {
			heads = append(heads, "berth / "+o.name)
		}
	}
	return heads
}

// writeMeasureRow writes one measure's table row: each runtime's value,
// then the ratios.
func writeMeasureRow(w *strings.Builder, name string, vals [][]float64, format func(float64) string, noRatio bool) {
	fmt.Fprintf(w, "| %s |", name)
	for _, v := range vals {
		fmt.Fprintf(w, " %s |", valueCell(v, format))
	}
	for _, c := range ratioCells(vals, noRatio) {
		fmt.Fprintf(w, " %s |", c)
	}
	fmt.Fprintln(w)
}

// ratioCells are a row's ratio cells in ratioHeads' order: vals[0] is
// berth's.
func ratioCells(vals [][]float64, noRatio bool) []string {
	if len(vals) < 2 {
		return nil
	}
	n := 1
	if len(vals) > 2 {
		n += len(vals) - 1
	}
	cells := make([]string, n)
	for i := range cells {
		cells[i] = "–"
	}
	if noRatio {
		return cells
	}
	cells[0] = ratioCell(vals[0], vals[1:]...)
	if len(vals) > 2 {
		for i, o := range vals[1:] {
			if o != nil {
				cells[1+i] = ratioCell(vals[0], o)
			}
		}
	}
	return cells
}

// writeConcTable writes the table of the phases with k in flight.
func writeConcTable(w *strings.Builder, r concResults, k int) {
	fmt.Fprintf(w, "### %d pods, %d in flight\n\n| measure |", r.pods, k)
	heads := ratioHeads(r.rows)
	for _, row := range r.rows {
		fmt.Fprintf(w, " %s |", row.name)
	}
	for _, h := range heads {
		fmt.Fprintf(w, " %s |", h)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(r.rows)+len(heads)))
	for _, m := range concMeasures {
		vals := rowValues(r.rows, k, m)
		writeMeasureRow(w, m.name, vals, m.format, m.noRatio)
	}
	fmt.Fprintln(w)
}
