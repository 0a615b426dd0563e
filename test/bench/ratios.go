package main

import (
	"fmt"
	"strings"
	"time"
)

func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// addSummaries adds percentiles term by term: a floor made of several steps.
func addSummaries(ss ...summary) summary {
	var out summary
	for _, s := range ss {
		out.P50 += s.P50
		out.P90 += s.P90
		out.Avg += s.Avg
	}
	return out
}

func writeRatios(w *strings.Builder, r *results) {
	f := r.floors
	pin, cni, mon := summarize(f.pin), summarize(f.cniAdd), summarize(f.monitor)
	runcCS, runcRun := summarize(f.runcCreStart), summarize(f.runcRun)
	runCtr, runPod := summarize(r.ctr.runs()), summarize(r.pod.runs())
	csCtr := summarize(r.ctr.createStarts())
	del, delAgain, runcDel := summarize(f.cniDel), summarize(f.cniDelAgain), summarize(f.runcDelete)
	stopCtr, removeCtr := summarize(r.ctr.stops()), summarize(r.ctr.removes())
	steps := addSummaries(pin, cni, mon)
	stepsPause := addSummaries(steps, runcCS)
	fmt.Fprintf(w, "### Ratios berth / floor\n\n")
	fmt.Fprintf(w, "Sums of floors add their p50s (p90s) term by term. \"gap p50\" is berth's p50 minus the floor's: "+
		"the time not explained by the floor.\n\n")
	fmt.Fprintf(w, "| berth call | floor | p50 ratio | p90 ratio | gap p50 |\n|---|---|---:|---:|---:|\n")
	for _, x := range []struct {
		call, floor string
		b, f        summary
	}{
		{"RunPodSandbox (pid CONTAINER)", "CNI ADD", runCtr, cni},
		{"RunPodSandbox (pid CONTAINER)", "pin + CNI ADD + monitor launch", runCtr, steps},
		{"RunPodSandbox (pid POD)", "CNI ADD", runPod, cni},
		{"RunPodSandbox (pid POD)", "pin + CNI ADD + monitor launch + runc create+start", runPod, stepsPause},
		{"CreateContainer + StartContainer", "runc create + runc start", csCtr, runcCS},
		{"CreateContainer + StartContainer", "runc run of true", csCtr, runcRun},
		{"CreateContainer + StartContainer", "berth's bundle, pinned runc: create + start", csCtr, summarize(f.bundleCreStart)},
		{"CreateContainer + StartContainer", "berth's bundle, pinned runc: run --detach", csCtr, summarize(f.bundleRun)},
		{"StopPodSandbox (pid CONTAINER)", "runc kill + delete, + CNI DEL", stopCtr, addSummaries(runcDel, del)},
		{"RemovePodSandbox (pid CONTAINER)", "CNI DEL again (nothing cached)", removeCtr, delAgain},
	} {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", x.call, x.floor,
			ratio(x.b.P50, x.f.P50), ratio(x.b.P90, x.f.P90), ms(x.b.P50-x.f.P50))
	}
	fmt.Fprintf(w, "\nThis machine vs containerd's: CNI ADD p50 %s vs 43 ms (%s), `runc run` p50 %s vs 27 ms (%s).\n\n",
		ms(cni.P50), ratio(cni.P50, refCNIAdd), ms(runcRun.P50), ratio(runcRun.P50, refRuncRun))
}

func mib(kib int64) string { return fmt.Sprintf("%.2f MiB", float64(kib)/1024) }

func writeMemory(w *strings.Builder, r *results) {
	m := r.mem
	fmt.Fprintf(w, "## 3. Memory\n\nFrom /proc/PID/smaps_rollup, %s after the processes started.\n\n", settle)
	fmt.Fprintf(w, "| process | situation | PSS | RSS | containerd 1.6 | goal |\n|---|---|---:|---:|---:|---:|\n")
	shim := fmt.Sprintf("shim %.1f MB PSS (%.0f MB RSS)", refShimPSSMB, refShimRSSMB)
	monGoal := fmt.Sprintf("≤ %.0f MB PSS", goalMonitorMB)
	idleRef, idleGoal := fmt.Sprintf("%.0f MB RSS", refIdleRSSMB), fmt.Sprintf("≤ %.0f MB RSS", goalIdleRSSMB)
	rows := []struct {
		proc, what string
		u          usage
		ref, goal  string
	}{
		{"berth-monitor", "the only pod, 1 running container", m.oneMonitor, shim, monGoal},
		{"berth-monitor", fmt.Sprintf("mean per monitor, %d pods running", m.pods), m.monitorsMean, shim, monGoal},
		{"berth-monitor", fmt.Sprintf("sum of %d monitors", m.pods), m.monitorsTotal, "", ""},
		{"berth-pause", "pod with pid POD, alone", m.pause, "", ""},
		{"berth-monitor", "that pod's (holds berth-pause + sleep)", m.pauseMonitor, "", ""},
		{"berth serve", "idle: 1 s after start, no pods", m.serveIdle, idleRef, idleGoal},
		{"berth serve", "idle again after the latency runs", m.serveIdleAfter, "", ""},
		{"berth serve", fmt.Sprintf("%d pods running", m.pods), m.serveWithPods, "", ""},
		{"busybox sleep", "the container itself, for scale", m.containerSample, "", ""},
	}
	for _, x := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", x.proc, x.what, mib(x.u.PSS), mib(x.u.RSS), dash(x.ref), dash(x.goal))
	}
	fmt.Fprintln(w)
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func writeReference(w *strings.Builder, r *results) {
	runCtr := summarize(r.ctr.runs())
	cs := summarize(r.ctr.createStarts())
	fmt.Fprintf(w, "## 4. Reference: containerd 1.6 (as given to us) and berth's goals\n\n")
	fmt.Fprintf(w, "| metric | containerd 1.6 | goal | berth here (p50) |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(w, "| RunPodSandbox | 119 ms | ≤ 60 ms | %s |\n", ms(runCtr.P50))
	fmt.Fprintf(w, "| CreateContainer + StartContainer | 9 + 64 ms | ≤ 40 ms | %s + %s |\n",
		ms(summarize(r.ctr.creates()).P50), ms(summarize(r.ctr.starts()).P50))
	fmt.Fprintf(w, "| (sum) | 73 ms | ≤ 40 ms | %s |\n", ms(cs.P50))
	fmt.Fprintf(w, "| CNI ADD alone | 43 ms | – | %s |\n", ms(summarize(r.floors.cniAdd).P50))
	fmt.Fprintf(w, "| `runc run` of true | 27 ms | – | %s |\n", ms(summarize(r.floors.runcRun).P50))
	fmt.Fprintf(w, "| per-pod process | shim 3.2 MB PSS (13 MB RSS) | ≤ 1 MB PSS | monitor %s PSS (%s RSS), mean of %d |\n",
		mib(r.mem.monitorsMean.PSS), mib(r.mem.monitorsMean.RSS), r.mem.pods)
	fmt.Fprintf(w, "| daemon idle | 38 MB RSS | ≤ 20 MB RSS | %s RSS |\n\n", mib(r.mem.serveIdle.RSS))
	if rows := r.runtimes.rows; len(rows) == 3 {
		fmt.Fprintf(w, "Measured here, in turns with berth (section 6): containerd 1.6 RunPodSandbox p50 %s, "+
			"CreateContainer + StartContainer p50 %s; berth with the pinned runc %s and %s.\n\n",
			ms(summarize(rows[2].l.runs()).P50), ms(summarize(rows[2].l.createStarts()).P50),
			ms(summarize(rows[0].l.runs()).P50), ms(summarize(rows[0].l.createStarts()).P50))
	}
}

func writeLeftovers(w *strings.Builder, r *results) {
	if len(r.leftovers) == 0 {
		fmt.Fprintf(w, "Cleanup: every pod removed through CRI; nothing was left behind.\n")
		return
	}
	fmt.Fprintf(w, "## Leftovers found during cleanup (removed by the bench)\n\n")
	for _, l := range r.leftovers {
		fmt.Fprintf(w, "- %s\n", l)
	}
}
