package workload

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// A rollout stuck on a new template that never gets ready (10 replicas,
// maxSurge 3, maxUnavailable 2: the old ReplicaSet at 8, the new at 5) is
// scaled to 15: the 5 more replicas are shared out in proportion, 3 to
// the old and 2 to the new (Kubernetes' documentation, "Proportional
// scaling"), in one step with nothing else done; then the rollout goes on
// and completes at 15.
func TestScalingARolloutIsProportional(t *testing.T) {
	d := newDeployment(10, intstr.FromInt32(3), intstr.FromInt32(2))
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 2}
	c.settle(d, nil)
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	d.Generation++
	c.readyAfter = 1 << 30 // the new pods never get ready
	for range 10 {
		c.step(d)
	}
	newRS, old := splitReplicaSets(d, c.sets)
	if len(old) != 1 || Replicas(old[0].Spec.Replicas) != 8 || newRS == nil || Replicas(newRS.Spec.Replicas) != 5 {
		t.Fatalf("the stuck rollout: %s", setSizes(c.sets))
	}

	d.Spec.Replicas = ptr.To(int32(15))
	d.Generation++
	if !scalingEvent(d, c.sets) {
		t.Fatal("a changed replicas is not a scaling event")
	}
	a := c.step(d)
	if a.Create != nil || Replicas(old[0].Spec.Replicas) != 11 || Replicas(newRS.Spec.Replicas) != 7 {
		t.Fatalf("scaled to 15 mid-rollout: %s (created %v); want the old at 11, the new at 7", setSizes(c.sets), a.Create != nil)
	}
	if scalingEvent(d, c.sets) {
		t.Fatalf("still a scaling event after the scale: %s", setSizes(c.sets))
	}

	c.readyAfter = 2
	c.settle(d, func(int) {
		if _, total := c.counts(); total > 15+3 {
			t.Fatalf("%d replicas in all, more than 15+3", total)
		}
	})
	if newRS, _ = splitReplicaSets(d, c.sets); len(c.pods[newRS.Name]) != 15 {
		t.Fatalf("after the rollout: %s", setSizes(c.sets))
	}
}

// A ReplicaSet left at its size by a scale is still marked as scaled for
// the Deployment's replicas, so that the scaling event ends.
func TestScaleMarksUnchangedReplicaSets(t *testing.T) {
	d := newDeployment(10, intstr.FromInt32(3), intstr.FromInt32(2))
	t0 := time.Unix(1000, 0)
	oldRS := newReplicaSet(d, nil, nil, 8, t0)
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	newRS := newReplicaSet(d, []*appsv1.ReplicaSet{oldRS}, nil, 5, t0.Add(time.Second))
	oldRS.Annotations[MaxReplicasAnnotation], newRS.Annotations[MaxReplicasAnnotation] = "13", "13"
	d.Spec.Replicas = ptr.To(int32(11)) // 11+3 = 14: one more, to the larger
	a := ReconcileDeployment(d, []*appsv1.ReplicaSet{oldRS, newRS}, t0.Add(2*time.Second))
	if a.Scale[oldRS.Name] != 9 || a.Scale[newRS.Name] != 5 || len(a.Events) != 1 {
		t.Fatalf("scale to 11: %v, events %+v; want the old at 9 and the new kept at 5 (marked), one event", a.Scale, a.Events)
	}
}

func setSizes(sets []*appsv1.ReplicaSet) string {
	s := ""
	for _, rs := range sets {
		s += rs.Name + "=" + itoa(Replicas(rs.Spec.Replicas)) + " "
	}
	return s
}

// A pass that only marks ReplicaSets as scaled for the replicas (none
// resized) is no progress: the Progressing condition keeps its time, so
// the progress deadline still runs.
func TestMarkingIsNoProgress(t *testing.T) {
	d := newDeployment(10, intstr.FromInt32(3), intstr.FromInt32(2))
	t0 := time.Unix(1000, 0)
	oldRS := newReplicaSet(d, nil, nil, 8, t0)
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	newRS := newReplicaSet(d, []*appsv1.ReplicaSet{oldRS}, nil, 5, t0.Add(time.Second))
	sets := []*appsv1.ReplicaSet{oldRS, newRS}
	setCondition(&d.Status, appsv1.DeploymentProgressing, v1.ConditionTrue, ReasonRSUpdated, "progressing", t0.Add(2*time.Second))
	before := condition(&d.Status, appsv1.DeploymentProgressing).DeepCopy()
	oldRS.Annotations[DesiredReplicasAnnotation] = "9" // made for 9: 8+5 is still 10+3
	a := ReconcileDeployment(d, sets, t0.Add(time.Minute))
	if len(a.Scale) != 1 || a.Scale[oldRS.Name] != 8 || len(a.Events) != 0 {
		t.Fatalf("marking pass: scale %v, events %+v; want the old one marked at 8, no event", a.Scale, a.Events)
	}
	if after := condition(&a.Status, appsv1.DeploymentProgressing); !after.LastUpdateTime.Equal(&before.LastUpdateTime) {
		t.Fatalf("Progressing moved from %v to %v on a pass that resized nothing", before.LastUpdateTime, after.LastUpdateTime)
	}
}
