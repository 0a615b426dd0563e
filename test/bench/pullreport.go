package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// goalPullRatio is the goal: berth's pull + unpack within 1.3× of
// skopeo copy + tar.
const goalPullRatio = 1.3

func writePull(w *strings.Builder, o options, r pullResults) {
	fmt.Fprintf(w, "## 5. Image pull\n\n")
	if !o.pull {
		fmt.Fprintf(w, "Skipped (-pull=false).\n\n")
		return
	}
	if r.skipped != "" {
		fmt.Fprintf(w, "Skipped: %s.\n\n", r.skipped)
		return
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	fmt.Fprintf(w, "Image: %d gzip layers, %.0f MB of blobs, %.0f MB unpacked (60%% text, 40%% random content), "+
		"served by docker-registry on 127.0.0.1 (plain HTTP, storage in the page cache). "+
		"berth: CRI PullImage into a store holding none of its layers (RemoveImage after each run); "+
		"floor: `skopeo copy docker://… dir:…` then `tar -xzf` of each layer into its own directory. "+
		"%d runs each, alternating which goes first; built in %s, pushed in %s (not measured).\n\n",
		r.layers, mb(r.blobBytes), mb(r.unpackedBytes), len(r.berth),
		r.build.Round(time.Millisecond), r.push.Round(time.Millisecond))
	fmt.Fprintf(w, "| | median | min | max | MB/s of blobs (median) | MB/s unpacked (median) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{
		{"berth PullImage (fetch + verify + unpack + commit)", r.berth},
		{"floor: skopeo copy", r.skopeo},
		{"floor: tar -xzf of every layer", r.tarX},
		{"floor: total", r.floor},
	} {
		med := summarize(row.d).P50
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.name, secs(med), secs(slices.Min(row.d)),
			secs(slices.Max(row.d)), rate(r.blobBytes, med), rate(r.unpackedBytes, med))
	}
	berth, floor := summarize(r.berth).P50, summarize(r.floor).P50
	fmt.Fprintf(w, "\nRatio berth / floor (medians): **%s** (goal ≤ %.1f×).", ratio(berth, floor), goalPullRatio)
	if r.coldViolations > 0 {
		fmt.Fprintf(w, " Warning: %d berth runs found layers of the image already in the store.", r.coldViolations)
	}
	fmt.Fprintf(w, "\n\n")
}

func secs(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func rate(bytes int64, d time.Duration) string {
	if d == 0 || bytes == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(bytes)/1e6/d.Seconds())
}
