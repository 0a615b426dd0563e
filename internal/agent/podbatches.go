package agent

import (
	"github.com/berth-dev/berth/internal/agent/workload"
)

// The pods a pass of the controllers finds missing (a ReplicaSet's, a
// Job's, a StatefulSet's with the Parallel policy) are made as
// kube-controller-manager makes them: at most 500 per sync (the
// workload package caps them: burstReplicas, MaxPodCreateDeletePerSync),
// in slow-start batches (1, 2, 4, ...), each batch under the agent's
// lock and the lock released between them, so CRI, the agent API and the
// pods' workers are answered while 500 pods are made. Between two
// batches an API call may change the owner: a batch checks it still
// stands as planned (the same object, not deleted, the same generation)
// and the rest is dropped otherwise; the next pass counts the pods
// afresh.

// podCreation is the pods an owner's sync found missing: each function
// makes one (under the agent's lock).
type podCreation struct {
	o          *workloadObj
	generation int64 // the owner's metadata.generation when planned
	pods       []func()
}

// plannedCreation is a creation for o, planned at its generation now.
func plannedCreation(o *workloadObj) podCreation {
	return podCreation{o: o, generation: o.meta().Generation}
}

// createPods makes c's pods, batch after batch.
func (a *Agent) createPods(c podCreation) {
	made := 0
	for _, size := range workload.SlowStartBatches(len(c.pods), workload.SlowStartInitialBatchSize) {
		if !a.createPodBatch(c, c.pods[made:made+size]) {
			return
		}
		made += size
	}
}

// createPodBatch makes a batch of c's pods under the agent's lock;
// false, making none, when the owner changed since the pass planned them
// or the agent is stopping.
func (a *Agent) createPodBatch(c podCreation, batch []func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := c.o.meta()
	if a.stopping || a.workloads[c.o.uid()] != c.o || m.DeletionTimestamp != nil || m.Generation != c.generation {
		return false
	}
	for _, create := range batch {
		create()
	}
	return true
}
