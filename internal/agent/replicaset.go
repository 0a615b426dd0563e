package agent

import (
	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// A ReplicaSet's missing pods are made as the replicaset controller
// makes them: at most workload.BurstReplicas per pass, in slow-start
// batches (1, 2, 4, ...), each batch under the agent's lock and the lock
// released between them, so CRI, the agent API and the pods' workers
// are answered while 500 pods are made. Between two batches an API call
// may change the ReplicaSet: a batch checks it still stands as planned
// (not deleted, not rescaled) and the pass stops otherwise; the next
// pass counts its pods afresh.

// replicaCreation is the pods a ReplicaSet's sync found missing.
type replicaCreation struct {
	o        *workloadObj
	count    int
	replicas int32 // spec.replicas the count was planned for
}

// createReplicas makes c's pods, batch after batch.
func (a *Agent) createReplicas(c replicaCreation) {
	for _, size := range workload.SlowStartBatches(c.count, workload.SlowStartInitialBatchSize) {
		if !a.createReplicaBatch(c, size) {
			return
		}
	}
}

// createReplicaBatch makes size pods of the ReplicaSet under the agent's
// lock; false, making none, when the ReplicaSet changed since the pass
// planned them or the agent is stopping.
func (a *Agent) createReplicaBatch(c replicaCreation, size int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	rs := c.o.rs
	if a.stopping || a.workloads[c.o.uid()] != c.o || rs.DeletionTimestamp != nil || workload.Replicas(rs.Spec.Replicas) != c.replicas {
		return false
	}
	for range size {
		name := a.createPodLocked(c.o, &rs.Spec.Template)
		c.o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", "Created pod: "+name)
	}
	return true
}
