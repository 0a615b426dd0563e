package workload

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

// Pod is what a controller needs to know of one pod it owns.
type Pod struct {
	Name     string
	Phase    v1.PodPhase
	Ready    bool
	Deleting bool // the pod is terminating (deletionTimestamp set)
	// ReadySince is when the pod's Ready condition last became true.
	ReadySince time.Time
	Created    time.Time
	// Restarts is the pod's highest container restart count.
	Restarts int32
}

// active says whether the pod counts towards replicas: not terminating
// and not finished.
func (p Pod) active() bool {
	return !p.Deleting && p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed
}

// available says whether the pod has been ready for minReadySeconds.
func (p Pod) available(minReadySeconds int32, now time.Time) bool {
	if !p.Ready {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !p.ReadySince.IsZero() && !p.ReadySince.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// ReplicaSetActions is what a ReplicaSet's reconcile asks for.
type ReplicaSetActions struct {
	// Create is how many pods to make from the template: at most
	// BurstReplicas, in SlowStartBatches.
	Create int
	// Delete names the pods to delete: finished ones, then those beyond
	// replicas, the least useful first (as the controller ranks them).
	Delete []string
	Status appsv1.ReplicaSetStatus
	// Requeue is when to look again without any change (a pod becomes
	// available after minReadySeconds); zero when nothing is pending.
	Requeue time.Time
}

// ReconcileReplicaSet compares the pods a ReplicaSet owns with its
// replicas. A ReplicaSet being deleted deletes every pod it owns.
func ReconcileReplicaSet(rs *appsv1.ReplicaSet, pods []Pod, now time.Time) ReplicaSetActions {
	var out ReplicaSetActions
	var active []Pod
	for _, p := range pods {
		switch {
		case p.active():
			active = append(active, p)
		case !p.Deleting:
			out.Delete = append(out.Delete, p.Name) // finished: replaced
		}
	}
	want := 0
	if rs.DeletionTimestamp == nil {
		want = int(Replicas(rs.Spec.Replicas))
	}
	switch diff := len(active) - want; {
	case diff < 0:
		out.Create = min(-diff, BurstReplicas)
	case diff > 0:
		rankForDeletion(active)
		for _, p := range active[:diff] {
			out.Delete = append(out.Delete, p.Name)
		}
	}
	out.Status, out.Requeue = replicaSetStatus(rs, pods, now)
	return out
}

// rankForDeletion orders pods the least useful first, as the replicaset
// controller does: not ready before ready, ready for a shorter time before
// longer, more restarts before fewer, newer before older.
func rankForDeletion(pods []Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		switch {
		case a.Ready != b.Ready:
			return !a.Ready
		case a.Ready && !a.ReadySince.Equal(b.ReadySince):
			return a.ReadySince.After(b.ReadySince)
		case a.Restarts != b.Restarts:
			return a.Restarts > b.Restarts
		case !a.Created.Equal(b.Created):
			return a.Created.After(b.Created)
		}
		return a.Name < b.Name
	})
}

// replicaSetStatus counts the pods as the controller reports them, and
// when the next pod becomes available.
func replicaSetStatus(rs *appsv1.ReplicaSet, pods []Pod, now time.Time) (appsv1.ReplicaSetStatus, time.Time) {
	status := appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Conditions: rs.Status.Conditions}
	var requeue time.Time
	terminating := int32(0)
	for _, p := range pods {
		if p.Deleting && p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed {
			terminating++
		}
		if !p.active() {
			continue
		}
		status.Replicas++
		status.FullyLabeledReplicas++
		if !p.Ready {
			continue
		}
		status.ReadyReplicas++
		if p.available(rs.Spec.MinReadySeconds, now) {
			status.AvailableReplicas++
		} else if at := p.ReadySince.Add(time.Duration(rs.Spec.MinReadySeconds) * time.Second); requeue.IsZero() || at.Before(requeue) {
			requeue = at
		}
	}
	status.TerminatingReplicas = &terminating
	return status, requeue
}
