package cgroupstats

import (
	"testing"
	"time"
)

func TestRateTracker(t *testing.T) {
	var tr RateTracker
	t0 := time.Unix(1000, 0)
	if _, ok := tr.NanoCores("c", Sample{Time: t0, CPUUsageNanos: 1e9}); ok {
		t.Fatal("first sample gave a rate")
	}
	// 0.5 s of CPU over 2 s of wall time: a quarter core.
	rate, ok := tr.NanoCores("c", Sample{Time: t0.Add(2 * time.Second), CPUUsageNanos: 1.5e9})
	if !ok || rate != 250_000_000 {
		t.Fatalf("rate = %d, %v; want 250000000, true", rate, ok)
	}
	// Two full cores over one second.
	rate, ok = tr.NanoCores("c", Sample{Time: t0.Add(3 * time.Second), CPUUsageNanos: 3.5e9})
	if !ok || rate != 2_000_000_000 {
		t.Fatalf("rate = %d, %v; want 2000000000, true", rate, ok)
	}
	// A counter going backwards (new cgroup under the same key) gives no rate.
	if _, ok := tr.NanoCores("c", Sample{Time: t0.Add(4 * time.Second), CPUUsageNanos: 10}); ok {
		t.Fatal("rate from a counter that went backwards")
	}
	// An older sample than the stored one is ignored.
	if _, ok := tr.NanoCores("c", Sample{Time: t0, CPUUsageNanos: 20}); ok {
		t.Fatal("rate from an out-of-order sample")
	}
	tr.Forget("c")
	if _, ok := tr.NanoCores("c", Sample{Time: t0.Add(9 * time.Second), CPUUsageNanos: 1e12}); ok {
		t.Fatal("rate after Forget")
	}
}
