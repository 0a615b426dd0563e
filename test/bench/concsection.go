package main

import (
	"fmt"
	"strings"
)

// writeConcurrency writes section 7: the runtimes under concurrency from
// one client each.
func writeConcurrency(w *strings.Builder, r concResults) {
	if len(r.rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## 7. Concurrency: %d pods from one CRI client per runtime, %s in flight\n\n", r.pods, (&r.ks).String())
	fmt.Fprintf(w, "Each runtime gets ONE gRPC connection for the whole section. A phase starts %d pods with K in flight "+
		"(each pod: RunPodSandbox, pid namespace CONTAINER, then CreateContainer + StartContainer of busybox `sleep 3600`, image present), "+
		"then stops and removes them all with K in flight (StopPodSandbox, RemovePodSandbox per pod). "+
		"The runtimes take turns phase by phase (berth K=%d, containerd 1.6 K=%d, containerd 2.4 K=%d, then the next K), "+
		"each phase after one discarded warm-up pod cycle. Times are client-side wall time; p50/p90/p99 interpolate between ranks. "+
		"Load average before / after the section: %s / %s.\n\n", r.pods, r.ks[0], r.ks[0], r.ks[0], r.loadBefore, r.loadAfter)
	writeConcRuntimes(w, r)
	for _, k := range r.ks {
		writeConcTable(w, r, k)
	}
	fmt.Fprintf(w, "Ratios are berth over containerd, value by value (p50 over p50, ...); below 1 berth is the better. "+
		"\"better containerd\" takes the lower of 1.6 and 2.4 for each value on its own. "+
		"**CPU-ms per pod** is the machine's busy CPU time from /proc/stat (user, nice, system, irq, softirq, steal) over the starts "+
		"(over the teardown) divided by the pods: it counts the daemon, its per-pod processes, runc, the CNI plugins and iptables, "+
		"and also anything else that ran on the machine meanwhile, so it holds only on a quiet machine (see the load average). "+
		"**Processes forked per pod** is the rise of /proc/stat's `processes` over the same interval divided by the pods, "+
		"threads included (a Go daemon starting threads counts).\n\n")
	writeProfiles(w, r.profiles)
	writeConcMemory(w, r)
}

// writeConcRuntimes writes the table of the section's runtimes: endpoint,
// version, CNI network, and why one was left out.
func writeConcRuntimes(w *strings.Builder, r concResults) {
	fmt.Fprintf(w, "| runtime | CRI endpoint | CRI Version | CNI network (bridge + host-local + portmap, the same options) | measured |\n|---|---|---|---|---|\n")
	for _, row := range r.rows {
		status := "yes"
		if row.skipped != "" {
			status = "no: " + row.skipped
			if len(row.phases) > 0 {
				status = fmt.Sprintf("%d phase(s), then no: %s", len(row.phases)-1, row.skipped)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", row.name, dash(codeOrEmpty(row.client.endpoint)), dash(row.version), dash(row.cni), status)
	}
	fmt.Fprintln(w)
}

// codeOrEmpty is s in backquotes, or "" for "".
func codeOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// memPhase is the runtime's first completed phase with K=1 (the one with
// the early memory reading), else its first completed phase.
func (row *concRuntime) memPhase() *concPhase {
	var first *concPhase
	for _, p := range row.phases {
		if p.failed != "" {
			continue
		}
		if p.k == 1 {
			return p
		}
		if first == nil {
			first = p
		}
	}
	return first
}

// concMemMeasures are the rows of the memory table: PSS per pod with
// memEarlyPods and with every pod up, and the daemon's RSS then.
var concMemMeasures = []concMeasure{
	{fmt.Sprintf("PSS per pod, %d pods up", memEarlyPods), func(p *concPhase) []float64 { return []float64{float64(p.memEarly.perPod())} }, fmtKiB, false},
	{"PSS per pod, every pod up", func(p *concPhase) []float64 { return []float64{float64(p.memAllUp.perPod())} }, fmtKiB, false},
	{"of which the holder (berth-monitor; the shim), every pod up", func(p *concPhase) []float64 {
		return []float64{float64(p.memAllUp.holderPerPod())}
	}, fmtKiB, false},
	{"per-pod processes counted, every pod up", func(p *concPhase) []float64 { return []float64{float64(p.memAllUp.procs)} }, fmtCount, true},
	{fmt.Sprintf("daemon RSS, %d pods up", memEarlyPods), func(p *concPhase) []float64 { return []float64{float64(p.memEarly.daemonRSS)} }, fmtKiB, false},
	{"daemon RSS, every pod up", func(p *concPhase) []float64 { return []float64{float64(p.memAllUp.daemonRSS)} }, fmtKiB, false},
}

// writeConcMemory writes the memory table, from each runtime's memPhase.
func writeConcMemory(w *strings.Builder, r concResults) {
	fmt.Fprintf(w, "### Memory with the pods up (%d pods, from the phase with 1 in flight)\n\n", r.pods)
	fmt.Fprintf(w, "PSS from /proc/PID/smaps_rollup, %s after the last start, of the per-pod processes: berth-monitor "+
		"(and berth-pause, which pid CONTAINER pods do not have) for berth; containerd-shim-runc-v2 and the sandbox's pause "+
		"process for containerd; not the containers. The starts wait for the reading (outside the wall time and the CPU count).\n\n", settle)
	heads := ratioHeads(r.rows)
	fmt.Fprintf(w, "| measure |")
	for _, row := range r.rows {
		fmt.Fprintf(w, " %s |", row.name)
	}
	for _, h := range heads {
		fmt.Fprintf(w, " %s |", h)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(r.rows)+len(heads)))
	for _, m := range concMemMeasures {
		vals := make([][]float64, len(r.rows))
		for i, row := range r.rows {
			if p := row.memPhase(); p != nil {
				if v := m.vals(p); v[0] > 0 {
					vals[i] = v
				}
			}
		}
		writeMeasureRow(w, m.name, vals, m.format, m.noRatio)
	}
	fmt.Fprintln(w)
}
