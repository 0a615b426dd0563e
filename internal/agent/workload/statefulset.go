package workload

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// StatefulSetPod is what the StatefulSet controller knows of one of its
// pods: the common view and its controller-revision-hash label.
type StatefulSetPod struct {
	Pod
	Revision string
}

// StatefulSetInput is what a StatefulSet's reconcile looks at: the set
// (its status holds the current revision), its revision for the present
// template, its pods, and the names of the claims made for it.
type StatefulSetInput struct {
	Set            *appsv1.StatefulSet
	UpdateRevision string
	Pods           []StatefulSetPod
	Claims         []string
	Now            time.Time
}

// PodToCreate is a pod to make: its ordinal and the revision whose
// template it runs.
type PodToCreate struct {
	Ordinal  int
	Revision string
}

// StatefulSetActions is what the controller asks for: pods to make (their
// claims first, StatefulSetClaims), pods to delete, claims to delete (by
// the retention policy) and the set's new status.
type StatefulSetActions struct {
	Create       []PodToCreate
	Delete       []string
	DeleteClaims []string
	Status       appsv1.StatefulSetStatus
}

// ReconcileStatefulSet takes a StatefulSet one step towards its replicas
// and template, as the statefulset controller does: pods "<set>-<ordinal>"
// for each ordinal in [start, start+replicas); with OrderedReady one at a
// time, each created only once every lower ordinal is Running and Ready,
// removed in reverse order one at a time, and nothing else done while a
// pod is not Running and Ready; with Parallel all at once. A finished
// (Failed or Succeeded) pod is deleted and made again at its ordinal. A
// RollingUpdate deletes pods of an older revision from the highest
// ordinal down to the partition, with at most maxUnavailable pods
// unavailable; OnDelete waits for pods to be deleted. Claims of ordinals
// scaled away go when their pod is gone if whenScaled is Delete.
func ReconcileStatefulSet(in StatefulSetInput) StatefulSetActions {
	set := in.Set
	start, replicas := statefulSetOrdinals(set)
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	byOrdinal := map[int]StatefulSetPod{}
	var condemned []int
	for _, p := range in.Pods {
		ord, ok := StatefulSetOrdinal(set, p.Name)
		if !ok {
			continue // not a name the set gives: not its to touch
		}
		byOrdinal[ord] = p
		if ord < start || ord >= start+replicas {
			condemned = append(condemned, ord)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(condemned)))
	act := StatefulSetActions{}
	act.Status = statefulSetStatus(set, in, byOrdinal)
	if set.DeletionTimestamp != nil {
		return act
	}
	blocked := false
	for ord := start; ord < start+replicas && !blocked; ord++ {
		p, exists := byOrdinal[ord]
		switch {
		case !exists:
			act.Create = append(act.Create, PodToCreate{Ordinal: ord, Revision: revisionFor(set, in.UpdateRevision, ord-start)})
			blocked = monotonic
		case p.Deleting:
			blocked = monotonic
		case p.Phase == v1.PodFailed || p.Phase == v1.PodSucceeded:
			act.Delete = append(act.Delete, p.Name)
			blocked = monotonic
		case !runningAndAvailable(p.Pod, set.Spec.MinReadySeconds, in.Now):
			blocked = monotonic
		}
	}
	if blocked {
		return act
	}
	act.scaleDown(set, in, byOrdinal, condemned, monotonic)
	if len(act.Create)+len(act.Delete) == 0 && len(condemned) == 0 {
		act.rollingUpdate(set, in, byOrdinal, start, replicas)
	}
	return act
}

// scaleDown deletes the pods of ordinals out of range, highest first (one
// at a time with OrderedReady, waiting for the last one to go), and the
// claims left without a pod if whenScaled is Delete.
func (a *StatefulSetActions) scaleDown(set *appsv1.StatefulSet, in StatefulSetInput, byOrdinal map[int]StatefulSetPod, condemned []int, monotonic bool) {
	for _, ord := range condemned {
		p := byOrdinal[ord]
		if p.Deleting {
			if monotonic {
				break
			}
			continue
		}
		a.Delete = append(a.Delete, p.Name)
		if monotonic {
			break
		}
	}
	rp := set.Spec.PersistentVolumeClaimRetentionPolicy
	if rp == nil || rp.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return
	}
	for _, name := range in.Claims {
		ord, ok := ClaimOrdinal(set, name)
		if _, hasPod := byOrdinal[ord]; ok && !hasPod && !StatefulSetUsesClaim(set, name) {
			a.DeleteClaims = append(a.DeleteClaims, name)
		}
	}
}

// rollingUpdate deletes pods of an older revision, from the highest
// ordinal down to the partition, keeping at most maxUnavailable pods
// unavailable; their ordinals are made again at the update revision.
func (a *StatefulSetActions) rollingUpdate(set *appsv1.StatefulSet, in StatefulSetInput, byOrdinal map[int]StatefulSetPod, start, replicas int) {
	s := set.Spec.UpdateStrategy
	if s.Type != appsv1.RollingUpdateStatefulSetStrategyType && s.Type != "" {
		return
	}
	partition, maxUnavailable := 0, 1
	if ru := s.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		if ru.MaxUnavailable != nil {
			n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicas, false)
			if err == nil {
				maxUnavailable = max(n, 1)
			}
		}
	}
	unavailable := 0
	for ord := start; ord < start+replicas; ord++ {
		if p := byOrdinal[ord]; p.Deleting || !runningAndAvailable(p.Pod, set.Spec.MinReadySeconds, in.Now) {
			unavailable++
		}
	}
	for ord := start + replicas - 1; ord >= start+partition && unavailable < maxUnavailable; ord-- {
		if p := byOrdinal[ord]; p.Revision != in.UpdateRevision && !p.Deleting {
			a.Delete = append(a.Delete, p.Name)
			unavailable++
		}
	}
}

// revisionFor is the revision a new pod at index (ordinal - start) runs:
// the current one below a RollingUpdate's partition, else the update one.
func revisionFor(set *appsv1.StatefulSet, update string, index int) string {
	s := set.Spec.UpdateStrategy
	current := set.Status.CurrentRevision
	if current == "" || s.Type != appsv1.RollingUpdateStatefulSetStrategyType || s.RollingUpdate == nil || s.RollingUpdate.Partition == nil {
		return update
	}
	if index < int(*s.RollingUpdate.Partition) {
		return current
	}
	return update
}

// statefulSetOrdinals is the set's first ordinal and its replicas.
func statefulSetOrdinals(set *appsv1.StatefulSet) (start, replicas int) {
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	return start, int(Replicas(set.Spec.Replicas))
}

// runningAndAvailable says whether the pod is Running and has been Ready
// for minReadySeconds.
func runningAndAvailable(p Pod, minReadySeconds int32, now time.Time) bool {
	return p.Name != "" && p.Phase == v1.PodRunning && p.available(minReadySeconds, now)
}

// statefulSetStatus counts the pods as the controller does; the current
// revision becomes the update revision once every replica runs it and is
// ready.
func statefulSetStatus(set *appsv1.StatefulSet, in StatefulSetInput, byOrdinal map[int]StatefulSetPod) appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation, CollisionCount: set.Status.CollisionCount,
		CurrentRevision: set.Status.CurrentRevision, UpdateRevision: in.UpdateRevision,
	}
	if st.CurrentRevision == "" {
		st.CurrentRevision = in.UpdateRevision
	}
	for _, p := range byOrdinal {
		st.Replicas++
		if p.Phase == v1.PodRunning && p.Ready {
			st.ReadyReplicas++
			if p.available(set.Spec.MinReadySeconds, in.Now) {
				st.AvailableReplicas++
			}
		}
		if p.Deleting {
			continue
		}
		if p.Revision == st.CurrentRevision {
			st.CurrentReplicas++
		}
		if p.Revision == st.UpdateRevision {
			st.UpdatedReplicas++
		}
	}
	replicas := Replicas(set.Spec.Replicas)
	if st.CurrentRevision != st.UpdateRevision && st.UpdatedReplicas == replicas && st.ReadyReplicas == replicas && st.Replicas == replicas {
		st.CurrentRevision, st.CurrentReplicas = st.UpdateRevision, st.UpdatedReplicas
	}
	return st
}
