package main

import (
	"sort"
	"time"
)

// summary is the distribution of one measured operation.
type summary struct {
	N                  int
	P50, P90, P99, Avg time.Duration
}

// summarize sorts a copy of d and computes its percentiles and mean.
func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var total time.Duration
	for _, v := range s {
		total += v
	}
	return summary{
		N:   len(s),
		P50: percentile(s, 0.50),
		P90: percentile(s, 0.90),
		P99: percentile(s, 0.99),
		Avg: total / time.Duration(len(s)),
	}
}

// percentile interpolates linearly between the closest ranks of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := p * float64(len(sorted)-1)
	lo := int(pos)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + time.Duration(frac*float64(sorted[lo+1]-sorted[lo]))
}

// sumPairs returns a[i]+b[i] for every i.
func sumPairs(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(a))
	for i := range a {
		if i < len(b) {
			out = append(out, a[i]+b[i])
		}
	}
	return out
}
