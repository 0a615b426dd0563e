package cgroupstats

import "sync"

// RateTracker keeps the previous CPU sample per key (a container or pod id)
// to turn cumulative CPU time into nano cores. The zero value is ready.
type RateTracker struct {
	mu   sync.Mutex
	prev map[string]Sample
}

// NanoCores records s as the latest sample of key and returns the CPU rate
// since the previous one, in billionths of a core. ok is false for the first
// sample, or when the counter went backwards (a new cgroup under the same key).
func (t *RateTracker) NanoCores(key string, s Sample) (rate uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prev == nil {
		t.prev = map[string]Sample{}
	}
	prev, had := t.prev[key]
	if had && !s.Time.After(prev.Time) {
		return 0, false // a concurrent caller already stored a newer sample
	}
	t.prev[key] = s
	if !had {
		return 0, false
	}
	return nanoCores(prev, s)
}

// Forget drops the sample of a removed container or pod.
func (t *RateTracker) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.prev, key)
}

// nanoCores is the CPU rate between two samples of one cgroup.
func nanoCores(prev, cur Sample) (uint64, bool) {
	elapsed := cur.Time.Sub(prev.Time).Nanoseconds()
	if elapsed <= 0 || cur.CPUUsageNanos < prev.CPUUsageNanos {
		return 0, false
	}
	used := cur.CPUUsageNanos - prev.CPUUsageNanos
	// used ns of CPU per elapsed ns of wall time, scaled to 1e9 per core;
	// in float64 so that a long interval cannot overflow.
	return uint64(float64(used) / float64(elapsed) * 1e9), true
}
