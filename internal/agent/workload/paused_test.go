package workload

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func progressingOf(t *testing.T, d *appsv1.Deployment) appsv1.DeploymentCondition {
	t.Helper()
	c := condition(&d.Status, appsv1.DeploymentProgressing)
	if c == nil {
		t.Fatalf("no Progressing condition: %+v", d.Status)
	}
	return *c
}

// A paused Deployment: a changed template makes no ReplicaSet and no
// revision, the progress deadline does not run, replicas still apply to
// the ReplicaSet it has; resumed, the rollout completes.
func TestPausedDeploymentScalesButDoesNotRoll(t *testing.T) {
	d := newDeployment(3, intstr.FromString("25%"), intstr.FromString("25%"))
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(30))
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1}
	c.settle(d, nil)
	first := c.sets[0].Name

	d.Spec.Paused = true
	d.Generation++
	c.step(d)
	if p := progressingOf(t, d); p.Status != v1.ConditionUnknown || p.Reason != ReasonPaused || p.Message != "Deployment is paused" {
		t.Fatalf("paused: Progressing = %+v, want Unknown %s", p, ReasonPaused)
	}
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	d.Generation++
	for range 60 { // twice the progress deadline
		a := c.step(d)
		if a.Create != nil || len(a.Scale) > 0 || len(a.Revision) > 0 || len(a.Delete) > 0 {
			t.Fatalf("paused with a changed template: %+v", a)
		}
	}
	if len(c.sets) != 1 || c.sets[0].Name != first || Revision(c.sets[0]) != 1 || len(c.pods[first]) != 3 {
		t.Fatalf("paused: ReplicaSets %d (first %s, revision %d), %d pods", len(c.sets), c.sets[0].Name, Revision(c.sets[0]), len(c.pods[first]))
	}
	s := d.Status
	if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != 0 || s.Replicas != 3 || s.AvailableReplicas != 3 {
		t.Fatalf("paused status %+v", s)
	}
	if p := progressingOf(t, d); p.Reason != ReasonPaused {
		t.Fatalf("paused past the progress deadline: Progressing = %+v", p)
	}

	d.Spec.Replicas = ptr.To(int32(5))
	d.Generation++
	a := c.step(d)
	if a.Create != nil || len(a.Scale) != 1 || a.Scale[first] != 5 {
		t.Fatalf("scaling a paused Deployment: %+v", a)
	}
	for range 3 {
		c.step(d)
	}
	if len(c.pods[first]) != 5 || d.Status.AvailableReplicas != 5 || len(c.sets) != 1 {
		t.Fatalf("after scaling to 5 while paused: %d pods, %+v", len(c.pods[first]), d.Status)
	}

	d.Spec.Paused = false
	d.Generation++
	resumed := c.step(d)
	if resumed.Create == nil || Revision(resumed.Create) != 2 {
		t.Fatalf("resume: %+v, want the new template's ReplicaSet at revision 2", resumed)
	}
	c.settle(d, func(int) {
		if p := progressingOf(t, d); p.Reason == ReasonDeadlineExceeded {
			t.Fatalf("the rollout after a long pause timed out: %+v", p)
		}
	})
	newRS, old := splitReplicaSets(d, c.sets)
	if newRS.Name == first || len(c.pods[newRS.Name]) != 5 || c.totalOld(old) != 0 {
		t.Fatalf("after resume: new %s with %d pods, %d old pods", newRS.Name, len(c.pods[newRS.Name]), c.totalOld(old))
	}
}

// Resumed with nothing to roll and no progress, Progressing is
// DeploymentResumed, and the deadline counts from the resume.
func TestResumeRestartsTheProgressDeadline(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(10))
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1 << 30} // never ready
	c.step(d)
	d.Spec.Paused = true
	for range 30 {
		c.step(d)
	}
	if p := progressingOf(t, d); p.Reason != ReasonPaused {
		t.Fatalf("paused 30 s with a 10 s deadline: Progressing = %+v", p)
	}
	d.Spec.Paused = false
	c.step(d)
	p := progressingOf(t, d)
	if p.Status != v1.ConditionUnknown || p.Reason != ReasonResumed || p.Message != "Deployment is resumed" || !p.LastUpdateTime.Time.Equal(c.now) {
		t.Fatalf("resumed: Progressing = %+v, want Unknown %s at %v", p, ReasonResumed, c.now)
	}
	for range 9 {
		c.step(d)
	}
	if p := progressingOf(t, d); p.Reason != ReasonResumed {
		t.Fatalf("9 s after the resume: Progressing = %+v", p)
	}
	c.step(d)
	if p := progressingOf(t, d); p.Reason != ReasonDeadlineExceeded {
		t.Fatalf("10 s after the resume: Progressing = %+v, want %s", p, ReasonDeadlineExceeded)
	}
	// A timed-out rollout paused keeps its ProgressDeadlineExceeded.
	d.Spec.Paused = true
	c.step(d)
	if p := progressingOf(t, d); p.Reason != ReasonDeadlineExceeded {
		t.Fatalf("paused after timing out: Progressing = %+v", p)
	}
}

// Paused in the middle of a rollout, a scale is shared out in proportion
// to each ReplicaSet's size, as the controller's scale does.
func TestPausedRolloutScalesProportionally(t *testing.T) {
	cases := []struct {
		replicas          int32
		wantOld, wantNew  int32
		wantEventsMention string
	}{
		// 20 replicas + 5 surge = 25 for 8+5 made for 13: 8*25/13 ≈ 15, 5*25/13 ≈ 10.
		{20, 15, 10, "Scaled up"},
		// 4 + 1 surge = 5: 8*5/13 ≈ 3, 5*5/13 ≈ 2.
		{4, 3, 2, "Scaled down"},
		// 0: every ReplicaSet to 0.
		{0, 0, 0, "Scaled down"},
	}
	for _, tc := range cases {
		d := newDeployment(10, intstr.FromString("25%"), intstr.FromString("25%"))
		t0 := time.Unix(1000, 0)
		oldRS := newReplicaSet(d, nil, nil, 8, t0)
		oldRS.Annotations[MaxReplicasAnnotation] = "13"
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		newRS := newReplicaSet(d, []*appsv1.ReplicaSet{oldRS}, nil, 5, t0.Add(time.Second))
		newRS.Annotations[MaxReplicasAnnotation] = "13"
		d.Spec.Paused, d.Spec.Replicas = true, ptr.To(tc.replicas)
		a := ReconcileDeployment(d, []*appsv1.ReplicaSet{oldRS, newRS}, t0.Add(2*time.Second))
		if a.Create != nil || a.Scale[oldRS.Name] != tc.wantOld || a.Scale[newRS.Name] != tc.wantNew {
			t.Errorf("scale to %d while paused: create %v, scale %v; want old %d, new %d", tc.replicas, a.Create != nil, a.Scale, tc.wantOld, tc.wantNew)
		}
		if len(a.Events) == 0 || a.Events[0].Reason != "ScalingReplicaSet" || len(a.Events[0].Message) < len(tc.wantEventsMention) || a.Events[0].Message[:len(tc.wantEventsMention)] != tc.wantEventsMention {
			t.Errorf("scale to %d while paused: events %+v", tc.replicas, a.Events)
		}
	}
}

// A Deployment applied paused makes nothing until it is resumed.
func TestDeploymentCreatedPausedMakesNoReplicaSet(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.Paused = true
	a := ReconcileDeployment(d, nil, time.Unix(1000, 0))
	if a.Create != nil || len(a.Scale) > 0 {
		t.Fatalf("a Deployment created paused: %+v", a)
	}
	if p := condition(&a.Status, appsv1.DeploymentProgressing); p == nil || p.Reason != ReasonPaused {
		t.Fatalf("Progressing = %+v", p)
	}
}

// Paused when the new ReplicaSet has every replica available, the old
// ones still active go to zero (the controller's saturated case).
func TestPausedSaturatedNewReplicaSetScalesOldDown(t *testing.T) {
	d := newDeployment(4, intstr.FromInt32(1), intstr.FromInt32(0))
	t0 := time.Unix(1000, 0)
	oldRS := newReplicaSet(d, nil, nil, 1, t0)
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	newRS := newReplicaSet(d, []*appsv1.ReplicaSet{oldRS}, nil, 4, t0.Add(time.Second))
	newRS.Status.AvailableReplicas = 4
	d.Spec.Paused = true
	a := ReconcileDeployment(d, []*appsv1.ReplicaSet{oldRS, newRS}, t0.Add(2*time.Second))
	if n, scaled := a.Scale[oldRS.Name]; !scaled || n != 0 || len(a.Scale) != 1 || a.Create != nil {
		t.Fatalf("paused with a saturated new ReplicaSet: %+v", a.Scale)
	}
	newRS.Annotations[DesiredReplicasAnnotation] = "3" // made for another size: not saturated
	a = ReconcileDeployment(d, []*appsv1.ReplicaSet{oldRS, newRS}, t0.Add(2*time.Second))
	// 1+4 is already 4+1: nothing resized, the new one only marked as
	// scaled for 4.
	if _, scaled := a.Scale[oldRS.Name]; scaled || len(a.Scale) != 1 || a.Scale[newRS.Name] != 4 || len(a.Events) != 0 {
		t.Fatalf("not saturated: scale %+v, events %+v; want only the new one marked at 4", a.Scale, a.Events)
	}
}
