package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestReconcileReplicaSet(t *testing.T) {
	now := time.Unix(1000, 0)
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(2)), MinReadySeconds: 5}}
	ready := func(name string, since time.Duration) Pod {
		return Pod{Name: name, Phase: v1.PodRunning, Ready: true, ReadySince: now.Add(-since), Created: now.Add(-time.Hour)}
	}
	cases := []struct {
		name        string
		replicas    int32
		deleting    bool
		pods        []Pod
		wantCreate  int
		wantDelete  []string
		wantAvail   int32
		wantRequeue bool
	}{
		{name: "none yet", replicas: 2, wantCreate: 2},
		{name: "failed replaced", replicas: 2, pods: []Pod{ready("a", time.Minute), {Name: "b", Phase: v1.PodFailed}}, wantCreate: 1, wantDelete: []string{"b"}, wantAvail: 1},
		{name: "terminating not counted", replicas: 2, pods: []Pod{ready("a", time.Minute), {Name: "b", Phase: v1.PodRunning, Deleting: true}}, wantCreate: 1, wantAvail: 1},
		{name: "scale down: not ready first, then newest ready", replicas: 1,
			pods:       []Pod{ready("old", time.Hour), {Name: "pending", Phase: v1.PodPending}, ready("young", 2*time.Second)},
			wantDelete: []string{"pending", "young"}, wantAvail: 1, wantRequeue: true},
		{name: "deleted ReplicaSet deletes its pods", replicas: 2, deleting: true, pods: []Pod{ready("a", time.Minute)}, wantDelete: []string{"a"}, wantAvail: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := rs.DeepCopy()
			rs.Spec.Replicas = ptr.To(tc.replicas)
			if tc.deleting {
				rs.DeletionTimestamp = &metav1.Time{Time: now}
			}
			got := ReconcileReplicaSet(rs, tc.pods, now)
			if got.Create != tc.wantCreate || !slices.Equal(got.Delete, tc.wantDelete) || got.Status.AvailableReplicas != tc.wantAvail || got.Requeue.IsZero() == tc.wantRequeue {
				t.Fatalf("got create %d delete %v available %d requeue %v; want %d %v %d %v",
					got.Create, got.Delete, got.Status.AvailableReplicas, got.Requeue, tc.wantCreate, tc.wantDelete, tc.wantAvail, tc.wantRequeue)
			}
		})
	}
}

func TestRecreateWaitsForOldPods(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1}
	c.settle(d, nil)
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	d.Generation++
	c.settle(d, func(step int) {
		newRS, old := splitReplicaSets(d, c.sets)
		if newRS != nil && len(c.pods[newRS.Name]) > 0 && c.totalOld(old) > 0 {
			t.Fatalf("step %d: new pods while old ones remain", step)
		}
	})
}

func TestRevisionHistoryAndUndo(t *testing.T) {
	d := newDeployment(1, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.RevisionHistoryLimit = ptr.To(int32(1))
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1}
	for _, image := range []string{"busybox:1", "busybox:2", "busybox:3", "busybox:1"} {
		d.Spec.Template.Spec.Containers[0].Image = image
		d.Generation++
		c.settle(d, nil)
	}
	newRS, old := splitReplicaSets(d, c.sets)
	if len(old) != 1 || Revision(newRS) != 4 || !strings.HasPrefix(newRS.Name, "web-") {
		t.Fatalf("new %s revision %d, %d old kept; want revision 4 and 1 old", newRS.Name, Revision(newRS), len(old))
	}
	if ComputeHash(&d.Spec.Template, nil) != newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey] {
		t.Fatalf("pod-template-hash %q is not the template's hash", newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey])
	}
}

func TestPodName(t *testing.T) {
	name := PodName(strings.Repeat("x", 70))
	if len(name) != 63 {
		t.Fatalf("PodName of a long prefix: %d characters, want 63", len(name))
	}
	if n := PodName("web-abc"); len(n) != len("web-abc-")+5 || strings.ContainsAny(n[8:], "aeiou") {
		t.Fatalf("PodName = %q", n)
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(10))
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1 << 30} // never ready
	var progressing *appsv1.DeploymentCondition
	for range 30 {
		c.step(d)
		progressing = condition(&d.Status, appsv1.DeploymentProgressing)
		if progressing != nil && progressing.Reason == ReasonDeadlineExceeded {
			break
		}
	}
	if progressing == nil || progressing.Status != v1.ConditionFalse || progressing.Reason != ReasonDeadlineExceeded {
		t.Fatalf("Progressing = %+v after 30 s without a ready pod; want False %s", progressing, ReasonDeadlineExceeded)
	}
	if available := condition(&d.Status, appsv1.DeploymentAvailable); available == nil || available.Status != v1.ConditionFalse {
		t.Fatalf("Available = %+v, want False", available)
	}
}

func TestMinReadySecondsDelaysAvailability(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.MinReadySeconds = 5
	c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 1}
	for range 4 {
		c.step(d)
	}
	if d.Status.ReadyReplicas == 0 || d.Status.AvailableReplicas != 0 {
		t.Fatalf("after 4 s: %d ready, %d available; want ready ones, none available yet", d.Status.ReadyReplicas, d.Status.AvailableReplicas)
	}
	c.settle(d, nil)
}
