package workload

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// rollingUpdate scales the new ReplicaSet up within maxSurge (creating it
// if needed) and, when it did not, the old ones down within
// maxUnavailable: one step per reconcile, as the controller does.
func (a *DeploymentActions) rollingUpdate(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old, sets []*appsv1.ReplicaSet, now time.Time) {
	replicas := Replicas(d.Spec.Replicas)
	if newRS == nil {
		a.Create = newReplicaSet(d, sets, d.Status.CollisionCount, a.newReplicas(d, nil, sets), now)
		a.Events = append(a.Events, Event{Reason: "ScalingReplicaSet", Message: scaledUpMessage(a.Create)})
		return
	}
	if cur := a.specReplicas(newRS); cur > replicas {
		a.scale(newRS, replicas)
		return
	} else if next := a.newReplicas(d, newRS, sets); next > cur {
		a.scale(newRS, next)
		return
	}
	a.scaleDownOld(d, newRS, old, sets)
}

func scaledUpMessage(rs *appsv1.ReplicaSet) string {
	return "Scaled up replica set " + rs.Name + " from 0 to " + itoa(Replicas(rs.Spec.Replicas))
}

// newReplicas is the new ReplicaSet's replicas under maxSurge: every
// ReplicaSet's replicas together stay within replicas+maxSurge.
func (a *DeploymentActions) newReplicas(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, sets []*appsv1.ReplicaSet) int32 {
	replicas := Replicas(d.Spec.Replicas)
	cur := int32(0)
	if newRS != nil {
		cur = a.specReplicas(newRS)
	}
	surge, _ := Fenceposts(d)
	total := a.totalReplicas(sets)
	if total >= replicas+surge {
		return cur
	}
	return cur + min(replicas+surge-total, replicas-cur)
}

func (a *DeploymentActions) totalReplicas(sets []*appsv1.ReplicaSet) int32 {
	var total int32
	for _, rs := range sets {
		total += a.specReplicas(rs)
	}
	return total
}

// scaleDownOld scales old ReplicaSets down, oldest first: first their pods
// that are not available, then available ones as long as replicas -
// maxUnavailable pods stay available.
func (a *DeploymentActions) scaleDownOld(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old, sets []*appsv1.ReplicaSet) {
	if a.totalReplicas(old) == 0 {
		return
	}
	_, unavailable := Fenceposts(d)
	minAvailable := Replicas(d.Spec.Replicas) - unavailable
	newUnavailable := a.specReplicas(newRS) - newRS.Status.AvailableReplicas
	budget := a.totalReplicas(sets) - minAvailable - newUnavailable
	for _, rs := range old { // unhealthy pods first: they count for nothing
		if budget <= 0 {
			return
		}
		spec := a.specReplicas(rs)
		if down := min(budget, spec-rs.Status.AvailableReplicas); down > 0 {
			a.scale(rs, spec-down)
			budget -= down
		}
	}
	var available int32
	for _, rs := range sets {
		available += rs.Status.AvailableReplicas
	}
	budget = available - minAvailable
	for _, rs := range old {
		if budget <= 0 {
			return
		}
		spec := a.specReplicas(rs)
		if down := min(budget, spec); down > 0 {
			a.scale(rs, spec-down)
			budget -= down
		}
	}
}

// recreate scales every old ReplicaSet to zero, waits until none of their
// pods is left (running or terminating), then brings the new one up.
func (a *DeploymentActions) recreate(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old, sets []*appsv1.ReplicaSet, now time.Time) {
	waiting := false
	for _, rs := range old {
		a.scale(rs, 0)
		waiting = waiting || rs.Status.Replicas > 0 || ptr.Deref(rs.Status.TerminatingReplicas, 0) > 0
	}
	if waiting || len(a.Scale) > 0 {
		return
	}
	replicas := Replicas(d.Spec.Replicas)
	if newRS == nil {
		a.Create = newReplicaSet(d, sets, d.Status.CollisionCount, replicas, now)
		a.Events = append(a.Events, Event{Reason: "ScalingReplicaSet", Message: scaledUpMessage(a.Create)})
		return
	}
	a.scale(newRS, replicas)
}
