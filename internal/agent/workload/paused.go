package workload

import (
	"math"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

// The deployment controller's reasons for a paused and a resumed
// Deployment (Progressing Unknown: no progress is estimated while paused).
const (
	ReasonPaused  = "DeploymentPaused"
	ReasonResumed = "DeploymentResumed"
)

// scalingEvent says whether an active ReplicaSet of the Deployment was
// last scaled for another number of replicas than the Deployment's now
// (its desired-replicas annotation): the controller then only scales.
func scalingEvent(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) bool {
	for _, rs := range activeSets(sets) {
		if scaledForOther(rs, d) {
			return true
		}
	}
	return false
}

// scaledFor is the number of the Deployment's replicas a ReplicaSet was
// made or last scaled for (its desired-replicas annotation), if it says.
func scaledFor(rs *appsv1.ReplicaSet) (int32, bool) {
	desired, err := strconv.ParseInt(rs.Annotations[DesiredReplicasAnnotation], 10, 32)
	return int32(desired), err == nil
}

// scaledForOther says whether the ReplicaSet was scaled for another
// number of replicas than the Deployment's now.
func scaledForOther(rs *appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	desired, ok := scaledFor(rs)
	return ok && desired != Replicas(d.Spec.Replicas)
}

// withNew is old followed by newRS, when there is one (a new slice).
func withNew(old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	sets := append([]*appsv1.ReplicaSet(nil), old...)
	if newRS != nil {
		sets = append(sets, newRS)
	}
	return sets
}

// scaleSets scales the active ReplicaSets to the Deployment's replicas,
// then marks each one still made for another size as scaled for them
// (its annotations, without an event), as the controller's scale does:
// otherwise the scaling event would never end.
func (a *DeploymentActions) scaleSets(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	a.scaleToReplicas(d, newRS, old)
	sets := withNew(old, newRS)
	for _, rs := range activeSets(sets) {
		if _, scaled := a.Scale[rs.Name]; scaled {
			continue
		}
		if scaledForOther(rs, d) {
			a.Scale[rs.Name] = Replicas(rs.Spec.Replicas)
		}
	}
}

// scaleToReplicas is the controller's scale, its sync of a paused
// Deployment or of a scaling event: no new ReplicaSet and no rollout
// step, only its replicas applied to the ReplicaSets it has:
//   - the one active ReplicaSet (the newest when none is active) takes
//     them all;
//   - a saturated new ReplicaSet leaves the old ones at zero;
//   - with RollingUpdate, replicas+maxSurge less what the active ones have
//     is shared out among them in proportion to their size (the larger
//     first; newer first when adding, older first when removing), the
//     rest going to the first.
func (a *DeploymentActions) scaleToReplicas(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	replicas := Replicas(d.Spec.Replicas)
	if rs := activeOrLatest(newRS, old); rs != nil {
		a.scale(rs, replicas)
		return
	}
	if saturated(d, newRS) {
		for _, rs := range activeSets(old) {
			a.scale(rs, 0)
		}
		return
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return
	}
	sets := withNew(old, newRS)
	active := activeSets(sets)
	var total int32
	for _, rs := range active {
		total += Replicas(rs.Spec.Replicas)
	}
	allowed := int32(0)
	if replicas > 0 {
		surge, _ := Fenceposts(d)
		allowed = replicas + surge
	}
	toAdd := allowed - total
	if toAdd == 0 || len(active) == 0 {
		return
	}
	sortBySize(active, toAdd > 0)
	sizes := make([]int32, len(active))
	added := int32(0)
	for i, rs := range active {
		p := proportion(rs, d, toAdd, added)
		sizes[i] = Replicas(rs.Spec.Replicas) + p
		added += p
	}
	sizes[0] = max(0, sizes[0]+toAdd-added) // the leftover to the largest
	for i, rs := range active {
		a.scale(rs, sizes[i])
	}
}

// activeSets are the ReplicaSets with replicas.
func activeSets(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if Replicas(rs.Spec.Replicas) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// activeOrLatest is the one active ReplicaSet, or with none active the
// new one (else the newest old one); nil when several are active. old is
// oldest first.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sets := withNew(old, newRS)
	switch active := activeSets(sets); len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		if len(old) > 0 {
			return old[len(old)-1]
		}
		return nil
	case 1:
		return active[0]
	}
	return nil
}

// saturated says whether the new ReplicaSet has the Deployment's replicas,
// desired and available.
func saturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := scaledFor(rs)
	replicas := Replicas(d.Spec.Replicas)
	return ok && Replicas(rs.Spec.Replicas) == replicas && desired == replicas && rs.Status.AvailableReplicas == replicas
}

// sortBySize orders ReplicaSets the larger first; among equal ones the
// newer first when adding, the older first when removing.
func sortBySize(sets []*appsv1.ReplicaSet, adding bool) {
	sort.SliceStable(sets, func(i, j int) bool {
		x, y := Replicas(sets[i].Spec.Replicas), Replicas(sets[j].Spec.Replicas)
		if x != y {
			return x > y
		}
		if adding {
			return olderThan(sets[j], sets[i])
		}
		return olderThan(sets[i], sets[j])
	})
}

func olderThan(x, y *appsv1.ReplicaSet) bool {
	if !x.CreationTimestamp.Equal(&y.CreationTimestamp) {
		return x.CreationTimestamp.Before(&y.CreationTimestamp)
	}
	return x.Name < y.Name
}

// proportion is what a ReplicaSet gains (or loses) of toAdd, given what the
// ReplicaSets before it took: its size scaled from the max-replicas it was
// made or last scaled for to the Deployment's replicas+maxSurge, within
// what is left to add or remove.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	cur := Replicas(rs.Spec.Replicas)
	if cur == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fraction(rs, d)
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}

func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	cur, replicas := Replicas(rs.Spec.Replicas), Replicas(d.Spec.Replicas)
	if replicas == 0 {
		return -cur
	}
	surge, _ := Fenceposts(d)
	before, err := strconv.ParseInt(rs.Annotations[MaxReplicasAnnotation], 10, 32)
	if err != nil || before <= 0 {
		before = int64(d.Status.Replicas) // no annotation: the Deployment's size
		if before == 0 {
			return 0
		}
	}
	return int32(math.Round(float64(cur)*float64(replicas+surge)/float64(before))) - cur
}

// pausedProgress sets the Progressing condition of a paused Deployment
// (Unknown, DeploymentPaused) or of one resumed (Unknown,
// DeploymentResumed), so that the time spent paused never counts against
// progressDeadlineSeconds; a ProgressDeadlineExceeded condition stays. It
// says whether the Deployment is paused: its Progressing condition then
// stays as it is.
func pausedProgress(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	c := condition(s, appsv1.DeploymentProgressing)
	pausedBefore := c != nil && c.Reason == ReasonPaused
	switch {
	case c != nil && c.Reason == ReasonDeadlineExceeded:
	case d.Spec.Paused && !pausedBefore:
		setCondition(s, appsv1.DeploymentProgressing, v1.ConditionUnknown, ReasonPaused, "Deployment is paused", now)
	case !d.Spec.Paused && pausedBefore:
		setCondition(s, appsv1.DeploymentProgressing, v1.ConditionUnknown, ReasonResumed, "Deployment is resumed", now)
	}
	return d.Spec.Paused
}
