package workload

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Annotations the deployment controller sets on ReplicaSets.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
)

// Event is one thing a controller did, as `describe` lists it.
type Event struct {
	Reason  string
	Message string
	Warning bool // a Warning event (else Normal)
}

// DeploymentActions is what a Deployment's reconcile asks for.
type DeploymentActions struct {
	// Create is a new ReplicaSet for the current template (no UID yet).
	Create *appsv1.ReplicaSet
	// Scale maps a ReplicaSet's name to its new replicas (the same for
	// one only marked as scaled for the Deployment's replicas).
	Scale map[string]int32
	// Revision maps a ReplicaSet's name to its new revision annotation (a
	// rollback to an old template makes it the newest again).
	Revision map[string]string
	// Delete names old ReplicaSets beyond revisionHistoryLimit.
	Delete []string
	Status appsv1.DeploymentStatus
	Events []Event

	// resized says a ReplicaSet's size changed (a Scale entry may only
	// mark one left at its size as scaled for the Deployment's replicas).
	resized bool
}

// changed says the pass made or resized a ReplicaSet: progress.
func (a DeploymentActions) changed() bool { return a.Create != nil || a.resized }

// ReconcileDeployment takes a Deployment and the ReplicaSets it owns
// (their status up to date) one step towards its template and replicas,
// by its strategy. A paused one makes no new ReplicaSet and takes no
// rollout step: its replicas alone are applied (scaleSets); so does a
// scaling event, a rollout under way being scaled proportionally before
// it goes on.
func ReconcileDeployment(d *appsv1.Deployment, sets []*appsv1.ReplicaSet, now time.Time) DeploymentActions {
	out := DeploymentActions{Scale: map[string]int32{}, Revision: map[string]string{}}
	newRS, old := splitReplicaSets(d, sets)
	out.syncRevision(newRS, old)
	if d.DeletionTimestamp == nil {
		switch {
		case d.Spec.Paused || scalingEvent(d, sets):
			out.scaleSets(d, newRS, old)
		case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
			out.recreate(d, newRS, old, sets, now)
		default:
			out.rollingUpdate(d, newRS, old, sets, now)
		}
		out.cleanupHistory(d, old)
	}
	out.Status = deploymentStatus(d, newRS, sets, out, now)
	return out
}

// splitReplicaSets finds the ReplicaSet of the current template (the
// oldest if several) and the others, oldest first.
func splitReplicaSets(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := append([]*appsv1.ReplicaSet(nil), sets...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) {
			return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp)
		}
		return sorted[i].Name < sorted[j].Name
	})
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && TemplateEqualIgnoringHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// Revision is a ReplicaSet's revision annotation as a number (0 when
// absent or not a number).
func Revision(rs *appsv1.ReplicaSet) int64 {
	n, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func maxRevision(sets []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range sets {
		highest = max(highest, Revision(rs))
	}
	return highest
}

// syncRevision makes the current template's ReplicaSet the newest revision.
func (a *DeploymentActions) syncRevision(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	if newRS == nil {
		return
	}
	if highest := maxRevision(old); Revision(newRS) <= highest {
		a.Revision[newRS.Name] = strconv.FormatInt(highest+1, 10)
	}
}

// Replicas is a ReplicaSet's or Deployment's replicas (1 when unset).
func Replicas(replicas *int32) int32 { return ptr.Deref(replicas, 1) }

// specReplicas is a ReplicaSet's replicas after the scaling planned so far.
func (a *DeploymentActions) specReplicas(rs *appsv1.ReplicaSet) int32 {
	if n, found := a.Scale[rs.Name]; found {
		return n
	}
	return Replicas(rs.Spec.Replicas)
}

func (a *DeploymentActions) scale(rs *appsv1.ReplicaSet, to int32) {
	from := a.specReplicas(rs)
	if from == to {
		return
	}
	a.Scale[rs.Name] = to
	a.resized = true
	verb := "up"
	if to < from {
		verb = "down"
	}
	a.Events = append(a.Events, Event{Reason: "ScalingReplicaSet", Message: fmt.Sprintf("Scaled %s replica set %s from %d to %d", verb, rs.Name, from, to)})
}

// Fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas, as the controller does: both zero makes
// maxUnavailable 1.
func Fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	replicas := int(Replicas(d.Spec.Replicas))
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType || ru == nil {
		return 0, 0
	}
	s, errS := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxSurge, intstr.FromString("25%")), replicas, true)
	u, errU := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, intstr.FromString("25%")), replicas, false)
	if errS != nil || errU != nil { // validation refuses these; be safe
		return 0, 1
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(min(u, replicas))
}

// newReplicaSet is the ReplicaSet of d's current template, with replicas.
func newReplicaSet(d *appsv1.Deployment, sets []*appsv1.ReplicaSet, collisionCount *int32, replicas int32, now time.Time) *appsv1.ReplicaSet {
	hash := ComputeHash(&d.Spec.Template, collisionCount)
	for taken(sets, d.Name+"-"+hash) {
		collisionCount = ptr.To(ptr.Deref(collisionCount, 0) + 1)
		hash = ComputeHash(&d.Spec.Template, collisionCount)
	}
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector == nil { // validation requires one; a hand-edited record may lack it
		selector = &metav1.LabelSelector{}
	}
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	surge, _ := Fenceposts(d)
	rs := &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace,
			Labels: template.Labels,
			Annotations: map[string]string{
				RevisionAnnotation:        strconv.FormatInt(maxRevision(sets)+1, 10),
				DesiredReplicasAnnotation: strconv.Itoa(int(Replicas(d.Spec.Replicas))),
				MaxReplicasAnnotation:     strconv.Itoa(int(Replicas(d.Spec.Replicas) + surge)),
			},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			CreationTimestamp: metav1.NewTime(now),
			Generation:        1,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas), MinReadySeconds: d.Spec.MinReadySeconds,
			Selector: selector, Template: *template,
		},
	}
	return rs
}

func taken(sets []*appsv1.ReplicaSet, name string) bool {
	for _, rs := range sets {
		if rs.Name == name {
			return true
		}
	}
	return false
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit
// among the old ReplicaSets that are scaled down and have no pod left.
func (a *DeploymentActions) cleanupHistory(d *appsv1.Deployment, old []*appsv1.ReplicaSet) {
	limit := int(ptr.Deref(d.Spec.RevisionHistoryLimit, 10))
	var idle []*appsv1.ReplicaSet
	for _, rs := range old {
		if a.specReplicas(rs) == 0 && rs.Status.Replicas == 0 && ptr.Deref(rs.Status.TerminatingReplicas, 0) == 0 {
			idle = append(idle, rs)
		}
	}
	sort.SliceStable(idle, func(i, j int) bool { return Revision(idle[i]) < Revision(idle[j]) })
	for i := 0; i < len(idle)-limit; i++ {
		a.Delete = append(a.Delete, idle[i].Name)
	}
}
