package workload

// BurstReplicas is how many pods the replicaset controller creates or
// deletes in one sync at most (its burstReplicas); the next sync makes
// the rest.
const BurstReplicas = 500

// MaxPodCreateDeletePerSync is how many pods the job controller creates
// in one sync at most.
const MaxPodCreateDeletePerSync = 500

// SlowStartInitialBatchSize is the first batch of the controllers'
// slowStartBatch.
const SlowStartInitialBatchSize = 1

// SlowStartBatches splits count creations into the controllers' slow
// start batches: initial, then each batch twice the one before, the last
// one what remains (1, 2, 4, 8, ... for 1). The caller makes one batch at
// a time and stops at the first batch that fails, so a template the API
// server or the node keeps refusing costs one call, not count.
func SlowStartBatches(count, initial int) []int {
	var out []int
	for size := max(initial, 1); count > 0; size *= 2 {
		batch := min(size, count)
		out = append(out, batch)
		count -= batch
	}
	return out
}
