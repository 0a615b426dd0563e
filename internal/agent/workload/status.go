package workload

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The deployment controller's condition reasons.
const (
	ReasonNewRSAvailable       = "NewReplicaSetAvailable"
	ReasonNewRSCreated         = "NewReplicaSetCreated"
	ReasonRSUpdated            = "ReplicaSetUpdated"
	ReasonDeadlineExceeded     = "ProgressDeadlineExceeded"
	ReasonMinimumAvailable     = "MinimumReplicasAvailable"
	ReasonMinimumNotAvailable  = "MinimumReplicasUnavailable"
	defaultProgressDeadlineSec = 600
)

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// deploymentStatus counts the ReplicaSets' pods and sets the Available and
// Progressing conditions.
func deploymentStatus(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, sets []*appsv1.ReplicaSet, a DeploymentActions, now time.Time) appsv1.DeploymentStatus {
	status := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		CollisionCount:     d.Status.CollisionCount,
		Conditions:         append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	var specTotal int32
	for _, rs := range sets {
		status.Replicas += rs.Status.Replicas
		status.ReadyReplicas += rs.Status.ReadyReplicas
		status.AvailableReplicas += rs.Status.AvailableReplicas
		specTotal += a.specReplicas(rs)
		if t := rs.Status.TerminatingReplicas; t != nil {
			status.TerminatingReplicas = ptr.To(ptr.Deref(status.TerminatingReplicas, 0) + *t)
		}
	}
	if newRS != nil {
		status.UpdatedReplicas = newRS.Status.Replicas
	}
	status.UnavailableReplicas = max(0, specTotal-status.AvailableReplicas)
	_, unavailable := Fenceposts(d)
	if status.AvailableReplicas >= Replicas(d.Spec.Replicas)-unavailable {
		setCondition(&status, appsv1.DeploymentAvailable, v1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability.", now)
	} else {
		setCondition(&status, appsv1.DeploymentAvailable, v1.ConditionFalse, ReasonMinimumNotAvailable, "Deployment does not have minimum availability.", now)
	}
	progressing(d, newRS, a, &status, now)
	return status
}

// Complete says whether every replica runs the current template and is
// available, with no old pod left.
func Complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	replicas := Replicas(d.Spec.Replicas)
	return s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas == replicas &&
		s.ObservedGeneration >= d.Generation
}

// progressing sets the Progressing condition: created or updated while the
// rollout moves, NewReplicaSetAvailable once complete, and
// ProgressDeadlineExceeded when nothing moved for progressDeadlineSeconds
// (counted from the last update: a resume is one). A paused Deployment's
// stays DeploymentPaused.
func progressing(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, a DeploymentActions, s *appsv1.DeploymentStatus, now time.Time) {
	if pausedProgress(d, s, now) {
		return
	}
	prev := d.Status
	name := ""
	if newRS != nil {
		name = newRS.Name
	}
	switch {
	case a.Create != nil:
		setCondition(s, appsv1.DeploymentProgressing, v1.ConditionTrue, ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", a.Create.Name), now)
	case newRS == nil:
	case Complete(d, s):
		setCondition(s, appsv1.DeploymentProgressing, v1.ConditionTrue, ReasonNewRSAvailable, fmt.Sprintf("ReplicaSet %q has successfully progressed.", name), now)
	case a.changed() || s.UpdatedReplicas != prev.UpdatedReplicas || s.ReadyReplicas != prev.ReadyReplicas ||
		s.AvailableReplicas != prev.AvailableReplicas || s.Replicas != prev.Replicas:
		setCondition(s, appsv1.DeploymentProgressing, v1.ConditionTrue, ReasonRSUpdated, fmt.Sprintf("ReplicaSet %q is progressing.", name), now)
	default:
		c := condition(s, appsv1.DeploymentProgressing)
		deadline := time.Duration(ptr.Deref(d.Spec.ProgressDeadlineSeconds, defaultProgressDeadlineSec)) * time.Second
		if c != nil && c.Reason != ReasonNewRSAvailable && c.Reason != ReasonDeadlineExceeded && !c.LastUpdateTime.Add(deadline).After(now) {
			setCondition(s, appsv1.DeploymentProgressing, v1.ConditionFalse, ReasonDeadlineExceeded, fmt.Sprintf("ReplicaSet %q has timed out progressing.", name), now)
		}
	}
}

func condition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setCondition updates a condition in place: lastUpdateTime moves on every
// update, lastTransitionTime only when the status changes. An unchanged
// condition keeps its times.
func setCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType, status v1.ConditionStatus, reason, message string, now time.Time) {
	at := metav1.NewTime(now)
	c := condition(s, t)
	if c == nil {
		s.Conditions = append(s.Conditions, appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message, LastUpdateTime: at, LastTransitionTime: at})
		return
	}
	if c.Status == status && c.Reason == reason && c.Message == message && reason != ReasonRSUpdated {
		return
	}
	if c.Status != status {
		c.LastTransitionTime = at
	}
	c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, message, at
}
