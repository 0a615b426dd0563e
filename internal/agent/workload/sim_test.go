package workload

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// cluster simulates what the agent does with the actions: ReplicaSets
// made and scaled, pods made (ready after readyAfter steps) and deleted
// (gone one step later).
type cluster struct {
	t          *testing.T
	now        time.Time
	sets       []*appsv1.ReplicaSet
	pods       map[string][]*simPod // by ReplicaSet name
	readyAfter int
	serial     int
}

type simPod struct {
	Pod
	age int
}

func newDeployment(replicas int32, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("d-uid"), Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			RevisionHistoryLimit: ptr.To(int32(10)),
		},
	}
}

// step runs one reconcile of the Deployment and of every ReplicaSet.
func (c *cluster) step(d *appsv1.Deployment) DeploymentActions {
	c.now = c.now.Add(time.Second)
	c.ageAndReap()
	c.syncReplicaSets()
	a := ReconcileDeployment(d, c.sets, c.now)
	if a.Create != nil {
		c.sets = append(c.sets, a.Create)
	}
	for _, rs := range c.sets {
		if n, ok := a.Scale[rs.Name]; ok {
			surge, _ := Fenceposts(d)
			rs.Spec.Replicas = ptr.To(n)
			rs.Annotations[DesiredReplicasAnnotation] = itoa(Replicas(d.Spec.Replicas))
			rs.Annotations[MaxReplicasAnnotation] = itoa(Replicas(d.Spec.Replicas) + surge)
		}
		if r, ok := a.Revision[rs.Name]; ok {
			rs.Annotations[RevisionAnnotation] = r
		}
	}
	for _, name := range a.Delete {
		c.deleteSet(name)
	}
	d.Status = a.Status
	c.syncReplicaSets()
	return a
}

func (c *cluster) deleteSet(name string) {
	for i, rs := range c.sets {
		if rs.Name == name {
			if len(c.pods[name]) > 0 {
				c.t.Fatalf("ReplicaSet %s deleted with pods", name)
			}
			c.sets = append(c.sets[:i], c.sets[i+1:]...)
			return
		}
	}
	c.t.Fatalf("delete of unknown ReplicaSet %s", name)
}

func (c *cluster) ageAndReap() {
	for name, pods := range c.pods {
		var kept []*simPod
		for _, p := range pods {
			if p.Deleting {
				continue // gone
			}
			p.age++
			if p.age >= c.readyAfter && !p.Ready {
				p.Ready, p.ReadySince = true, c.now
			}
			kept = append(kept, p)
		}
		c.pods[name] = kept
	}
}

func (c *cluster) syncReplicaSets() {
	for _, rs := range c.sets {
		pods := make([]Pod, 0, len(c.pods[rs.Name]))
		for _, p := range c.pods[rs.Name] {
			pods = append(pods, p.Pod)
		}
		a := ReconcileReplicaSet(rs, pods, c.now)
		for _, name := range a.Delete {
			for _, p := range c.pods[rs.Name] {
				if p.Name == name {
					p.Deleting, p.Ready = true, false
				}
			}
		}
		for range a.Create {
			c.serial++
			c.pods[rs.Name] = append(c.pods[rs.Name], &simPod{Pod: Pod{Name: fmt.Sprintf("%s-%d", rs.Name, c.serial), Phase: v1.PodRunning, Created: c.now}})
		}
		pods = pods[:0]
		for _, p := range c.pods[rs.Name] {
			pods = append(pods, p.Pod)
		}
		rs.Status = ReconcileReplicaSet(rs, pods, c.now).Status
	}
}

// counts are the pods of every ReplicaSet: available (not deleting,
// ready) and the sum of replicas.
func (c *cluster) counts() (available, specTotal int32) {
	for _, rs := range c.sets {
		specTotal += Replicas(rs.Spec.Replicas)
		for _, p := range c.pods[rs.Name] {
			if p.Ready && !p.Deleting {
				available++
			}
		}
	}
	return available, specTotal
}

func (c *cluster) settle(d *appsv1.Deployment, check func(step int)) {
	for i := range 200 {
		c.step(d)
		if check != nil {
			check(i)
		}
		if Complete(d, &d.Status) && len(c.sets) > 0 {
			if _, old := splitReplicaSets(d, c.sets); c.totalOld(old) == 0 {
				return
			}
		}
	}
	c.t.Fatalf("the rollout did not complete in 200 steps: %+v", d.Status)
}

func (c *cluster) totalOld(old []*appsv1.ReplicaSet) int {
	n := 0
	for _, rs := range old {
		n += len(c.pods[rs.Name])
	}
	return n
}

func TestRollingUpdateBounds(t *testing.T) {
	cases := []struct {
		replicas           int32
		surge, unavailable intstr.IntOrString
		wantSurge, wantUn  int32
	}{
		{3, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
		{3, intstr.FromInt32(1), intstr.FromInt32(0), 1, 0},
		{3, intstr.FromInt32(0), intstr.FromInt32(1), 0, 1},
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2},
		{5, intstr.FromString("0%"), intstr.FromString("0%"), 0, 1},
		{4, intstr.FromInt32(2), intstr.FromInt32(2), 2, 2},
		{1, intstr.FromString("50%"), intstr.FromString("50%"), 1, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d-%s-%s", tc.replicas, tc.surge.String(), tc.unavailable.String()), func(t *testing.T) {
			d := newDeployment(tc.replicas, tc.surge, tc.unavailable)
			surge, unavailable := Fenceposts(d)
			if surge != tc.wantSurge || unavailable != tc.wantUn {
				t.Fatalf("Fenceposts = %d, %d; want %d, %d", surge, unavailable, tc.wantSurge, tc.wantUn)
			}
			c := &cluster{t: t, now: time.Unix(1000, 0), pods: map[string][]*simPod{}, readyAfter: 2}
			c.settle(d, nil)
			first := c.sets[0].Name
			d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
			d.Generation++
			c.settle(d, func(step int) {
				available, total := c.counts()
				if total > tc.replicas+surge {
					t.Fatalf("step %d: %d replicas in all, more than %d+%d", step, total, tc.replicas, surge)
				}
				if available < tc.replicas-unavailable {
					t.Fatalf("step %d: %d pods available, fewer than %d-%d", step, available, tc.replicas, unavailable)
				}
			})
			newRS, old := splitReplicaSets(d, c.sets)
			if newRS.Name == first || len(c.pods[newRS.Name]) != int(tc.replicas) || len(old) != 1 || Revision(newRS) != 2 {
				t.Fatalf("after the rollout: new %s (%d pods, revision %d), %d old", newRS.Name, len(c.pods[newRS.Name]), Revision(newRS), len(old))
			}
			if got := condition(&d.Status, appsv1.DeploymentProgressing); got == nil || got.Reason != ReasonNewRSAvailable {
				t.Fatalf("Progressing = %+v, want %s", got, ReasonNewRSAvailable)
			}
		})
	}
}
