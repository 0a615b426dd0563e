package main

import (
	"fmt"
	"strings"
	"time"
)

// runtimeCalls are the rows of the runtime comparison: each call of the
// cycle, create + start (what kubelet waits for to see a container
// running) and the whole cycle.
var runtimeCalls = []struct {
	name string
	pick func(latencies) []time.Duration
}{
	{"RunPodSandbox", latencies.runs},
	{"CreateContainer", latencies.creates},
	{"StartContainer", latencies.starts},
	{"**Create + Start**", latencies.createStarts},
	{"StopPodSandbox", latencies.stops},
	{"RemovePodSandbox", latencies.removes},
	{"whole cycle (run … remove)", latencies.wholes},
}

// writeRuntimes writes section 6: the runtimes measured side by side.
func writeRuntimes(w *strings.Builder, o options, r runtimeResults) {
	if !o.runtimes {
		return
	}
	fmt.Fprintf(w, "## 6. Runtimes side by side: berth with the pinned runc, berth with the system's runc, containerd 1.6\n\n")
	fmt.Fprintf(w, "The same client code drives each runtime through the same cycle as section 1 (pid CONTAINER): "+
		"RunPodSandbox, CreateContainer + StartContainer of busybox `sleep 3600` (image present), StopPodSandbox, RemovePodSandbox. "+
		"The runtimes take turns cycle by cycle, %d measured cycles each after 1 discarded; "+
		"both berth rows are one daemon and one connection, only RunPodSandbox's runtime_handler differs. "+
		"berth's pods are on %s; containerd's on the plugin list (bridge with ipMasq and hairpin, host-local, portmap; "+
		"its own bridge and subnet: -cni=plugins gives berth the same), with a sandbox (pause) container in every pod, as it always does.\n\n", o.runs, cniWords(o.cni))
	fmt.Fprintf(w, "| runtime | CRI endpoint | runtime_handler | CRI Version | runc |\n|---|---|---|---|---|\n")
	for _, row := range r.rows {
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s |\n", row.name, row.endpoint, handlerName(row.handler), dash(row.version), row.runc)
	}
	if r.noContainerd != "" {
		fmt.Fprintf(w, "\ncontainerd left out: %s.\n", r.noContainerd)
	}
	fmt.Fprintf(w, "\n| call |")
	for _, row := range r.rows {
		fmt.Fprintf(w, " %s: p50 / p90 / mean |", row.name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(r.rows)))
	for _, call := range runtimeCalls {
		fmt.Fprintf(w, "| %s |", call.name)
		for _, row := range r.rows {
			s := summarize(call.pick(row.l))
			fmt.Fprintf(w, " %s / %s / %s |", ms(s.P50), ms(s.P90), ms(s.Avg))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	writeRuntimeRatios(w, r)
}

// writeRuntimeRatios writes berth-pinned over each other runtime, call by
// call: below 1× berth with its pinned runc is the faster.
func writeRuntimeRatios(w *strings.Builder, r runtimeResults) {
	if len(r.rows) < 2 {
		return
	}
	pinned, others := r.rows[0], r.rows[1:]
	fmt.Fprintf(w, "### Ratios %s / the others\n\nBelow 1× %s is the faster.\n\n| call |", pinned.name, pinned.name)
	for _, o := range others {
		fmt.Fprintf(w, " / %s: p50 | mean |", o.name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|---:|", len(others)))
	for _, call := range runtimeCalls {
		p := summarize(call.pick(pinned.l))
		fmt.Fprintf(w, "| %s |", call.name)
		for _, o := range others {
			s := summarize(call.pick(o.l))
			fmt.Fprintf(w, " %s | %s |", ratio(p.P50, s.P50), ratio(p.Avg, s.Avg))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func handlerName(h string) string {
	if h == "" {
		return "(default)"
	}
	return "`" + h + "`"
}
