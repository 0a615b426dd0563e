package main

import (
	"fmt"
	"strings"
	"time"
)

// containerd 1.6 on this kind of machine, as given to us, and berth's goals.
const (
	refRunPod       = 119 * time.Millisecond
	refCreate       = 9 * time.Millisecond
	refStart        = 64 * time.Millisecond
	refCNIAdd       = 43 * time.Millisecond
	refRuncRun      = 27 * time.Millisecond
	refShimPSSMB    = 3.2
	refShimRSSMB    = 13.0
	refIdleRSSMB    = 38.0
	goalRunPod      = 60 * time.Millisecond
	goalCreateStart = 40 * time.Millisecond
	goalMonitorMB   = 1.0
	goalIdleRSSMB   = 20.0
)

// render builds the Markdown report.
func render(o options, r *results) string {
	var w strings.Builder
	writeHeader(&w, o, r)
	if o.only == onlyConcurrency {
		writeConcurrency(&w, r.conc)
		writeLeftovers(&w, r)
		return w.String()
	}
	writeLatencies(&w, r)
	writeFloors(&w, r)
	writeRatios(&w, r)
	writeMemory(&w, r)
	writeReference(&w, r)
	writePull(&w, o, r.pull)
	writeRuntimes(&w, o, r.runtimes)
	writeConcurrency(&w, r.conc)
	writeLeftovers(&w, r)
	return w.String()
}

func writeHeader(w *strings.Builder, o options, r *results) {
	h := r.host
	fmt.Fprintf(w, "# berth benchmark\n\n")
	fmt.Fprintf(w, "- date: %s; whole run %s\n", r.startedAt.Format(time.RFC3339), r.took.Round(time.Second))
	fmt.Fprintf(w, "- host: %s, %d CPUs, %s RAM, kernel %s, %s\n", h.cpu, h.cpus, h.memTotal, h.kernel, h.runc)
	fmt.Fprintf(w, "- load average before / after: %s / %s (other work on the machine shows up in the latencies)\n", r.loadBefore, r.load)
	if o.only == onlyConcurrency {
		fmt.Fprintf(w, "- only the concurrency section (-only=%s)\n\n", onlyConcurrency)
		return
	}
	fmt.Fprintf(w, "- %d measured runs per row after 1 discarded warm-up, serial; latencies are client-side wall time "+
		"through the CRI Go client over the unix socket; p50/p90 interpolate between ranks\n\n", o.runs)
}

func ms(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// serverP50 is the daemon's own median for method (its debug log).
func serverP50(s serverTimes, methods ...string) string {
	if len(methods) == 2 {
		return ms(summarize(sumPairs(s[methods[0]], s[methods[1]])).P50)
	}
	return ms(summarize(s[methods[0]]).P50)
}

func writeLatencies(w *strings.Builder, r *results) {
	fmt.Fprintf(w, "## 1. CRI latencies\n\n")
	fmt.Fprintf(w, "Pod network: %s. Container: busybox `sleep 3600`, image already present. ", r.berthCNI)
	fmt.Fprintf(w, "\"daemon p50\" is the duration berth's gRPC interceptor logged for the same calls.\n\n")
	fmt.Fprintf(w, "| call | pid namespace | p50 | p90 | mean | daemon p50 | containerd 1.6 | goal |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|\n")
	type row struct {
		name    string
		d       []time.Duration
		methods []string
		ref     time.Duration
		goal    time.Duration
	}
	for _, set := range []struct {
		mode string
		l    latencies
		srv  serverTimes
	}{{"CONTAINER", r.ctr, r.serverCtr}, {"POD (berth-pause)", r.pod, r.serverPod}} {
		rows := []row{
			{"RunPodSandbox", set.l.runs(), []string{"RunPodSandbox"}, refRunPod, goalRunPod},
			{"CreateContainer", set.l.creates(), []string{"CreateContainer"}, refCreate, 0},
			{"StartContainer", set.l.starts(), []string{"StartContainer"}, refStart, 0},
			{"Create + Start", set.l.createStarts(), []string{"CreateContainer", "StartContainer"}, refCreate + refStart, goalCreateStart},
			{"StopPodSandbox", set.l.stops(), []string{"StopPodSandbox"}, 0, 0},
			{"RemovePodSandbox", set.l.removes(), []string{"RemovePodSandbox"}, 0, 0},
		}
		for _, x := range rows {
			s := summarize(x.d)
			goal := "–"
			if x.goal > 0 {
				goal = "≤ " + ms(x.goal)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.name, set.mode,
				ms(s.P50), ms(s.P90), ms(s.Avg), serverP50(set.srv, x.methods...), ms(x.ref), goal)
		}
	}
	fmt.Fprintln(w)
	writeCallCounts(w, r)
}

// writeCallCounts writes what each call cost in store fsyncs (the
// daemon's berth_store_fsyncs_total) and processes forked (machine-wide,
// threads included), the median over the cycles.
func writeCallCounts(w *strings.Builder, r *results) {
	fmt.Fprintf(w, "Per call, the median over the same cycles: berth's store fsyncs (`berth_store_fsyncs_total`) and the "+
		"machine's processes forked (/proc/stat, threads included: runc's and the CNI plugins' count).\n\n")
	fmt.Fprintf(w, "| call | fsyncs, pid CONTAINER | forks, pid CONTAINER | fsyncs, pid POD | forks, pid POD |\n|---|---:|---:|---:|---:|\n")
	for i, name := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopPodSandbox", "RemovePodSandbox"} {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", name,
			r.ctr.medianCount(i, true), r.ctr.medianCount(i, false), r.pod.medianCount(i, true), r.pod.medianCount(i, false))
	}
	fmt.Fprintln(w)
}

func writeFloors(w *strings.Builder, r *results) {
	f := r.floors
	fmt.Fprintf(w, "## 2. Floors (same machine)\n\n")
	fmt.Fprintf(w, "CNI ADD goes through berth's `internal/network` (libcni) with the daemon's own conflist into fresh namespaces; "+
		"the system's runc runs `runc spec`'s minimal spec on the image's unpacked layer (read-only rootfs), stdio on /dev/null; "+
		"\"berth's own bundle\" is the pinned runc (berth's default) on the bundle of a container berth prepared (its config.json, "+
		"its mounted rootfs, busybox `sleep 3600` in a pod), stdio on /dev/null.\n\n")
	fmt.Fprintf(w, "| floor | p50 | p90 | mean | on containerd's machine |\n|---|---:|---:|---:|---:|\n")
	for _, x := range []struct {
		name string
		d    []time.Duration
		ref  time.Duration
	}{
		{"pin net+ipc+uts namespaces (`network.Pin`)", f.pin, 0},
		{"CNI ADD alone (berth's network, lo up in-process)", f.cniAdd, refCNIAdd},
		{"CNI DEL right after (from libcni's cache)", f.cniDel, 0},
		{"CNI DEL again (nothing cached: DEL with the current config)", f.cniDelAgain, 0},
		{"berth-monitor launch until it listens", f.monitor, 0},
		{"`runc run` of `true`", f.runcRun, refRuncRun},
		{"`runc create` of `sleep`", f.runcCreate, 0},
		{"`runc start`", f.runcStart, 0},
		{"`runc create` + `runc start`", f.runcCreStart, 0},
		{"stop: `runc kill KILL` + wait for exit + `runc delete`", f.runcDelete, 0},
		{"berth's own bundle, pinned runc: `runc create` + `runc start`", f.bundleCreStart, 0},
		{"berth's own bundle, pinned runc: `runc run --detach`", f.bundleRun, 0},
	} {
		s := summarize(x.d)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", x.name, ms(s.P50), ms(s.P90), ms(s.Avg), ms(x.ref))
	}
	fmt.Fprintln(w)
}
