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

var stsNow = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

func testSet(replicas int32, mutate ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "sts-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: "db", PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		},
		Status: appsv1.StatefulSetStatus{CurrentRevision: "db-old"},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// pods builds pods from "ordinal:state:revision" specs; state is r (Running
// and Ready), n (Running, not ready), p (Pending), f (Failed), d (deleting).
func stsPods(specs ...string) []StatefulSetPod {
	var out []StatefulSetPod
	for _, s := range specs {
		f := strings.Split(s, ":")
		p := StatefulSetPod{Pod: Pod{Name: "db-" + f[0], Phase: v1.PodRunning}, Revision: "db-" + f[2]}
		switch f[1] {
		case "r":
			p.Ready, p.ReadySince = true, stsNow.Add(-time.Minute)
		case "p":
			p.Phase = v1.PodPending
		case "f":
			p.Phase = v1.PodFailed
		case "d":
			p.Deleting = true
		}
		out = append(out, p)
	}
	return out
}

func TestReconcileStatefulSet(t *testing.T) {
	parallel := func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
	partition := func(n int32) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = &n }
	}
	deleteWhenScaled := func(s *appsv1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	cases := []struct {
		name         string
		set          *appsv1.StatefulSet
		update       string
		pods         []string
		claims       []string
		create       []PodToCreate
		del, delPVCs []string
	}{
		{name: "first pod first", set: testSet(3), update: "db-old", create: []PodToCreate{{0, "db-old"}}},
		{name: "next waits for ready", set: testSet(3), update: "db-old", pods: []string{"0:n:old"}},
		{name: "next waits for running", set: testSet(3), update: "db-old", pods: []string{"0:p:old"}},
		{name: "next once ready", set: testSet(3), update: "db-old", pods: []string{"0:r:old"}, create: []PodToCreate{{1, "db-old"}}},
		{name: "a gap is filled at its ordinal", set: testSet(3), update: "db-old", pods: []string{"0:r:old", "2:r:old"}, create: []PodToCreate{{1, "db-old"}}},
		{name: "parallel makes all", set: testSet(3, parallel), update: "db-old", create: []PodToCreate{{0, "db-old"}, {1, "db-old"}, {2, "db-old"}}},
		{name: "failed pod replaced", set: testSet(2), update: "db-old", pods: []string{"0:f:old", "1:r:old"}, del: []string{"db-0"}},
		{name: "scale down highest first", set: testSet(1), update: "db-old", pods: []string{"0:r:old", "1:r:old", "2:r:old"}, del: []string{"db-2"}},
		{name: "scale down waits for the last one", set: testSet(1), update: "db-old", pods: []string{"0:r:old", "1:r:old", "2:d:old"}},
		{name: "scale down waits for unready", set: testSet(1), update: "db-old", pods: []string{"0:n:old", "1:r:old"}},
		{name: "parallel scale down", set: testSet(1, parallel), update: "db-old", pods: []string{"0:r:old", "1:r:old", "2:r:old"}, del: []string{"db-2", "db-1"}},
		{name: "claims retained on scale down", set: testSet(1), update: "db-old", pods: []string{"0:r:old"}, claims: []string{"data-db-0", "data-db-1"}},
		{name: "claims deleted on scale down", set: testSet(1, deleteWhenScaled), update: "db-old", pods: []string{"0:r:old", "2:d:old"},
			claims: []string{"data-db-0", "data-db-1", "data-db-2", "other-db-1"}, delPVCs: []string{"data-db-1"}},
		{name: "update from the top", set: testSet(3), update: "db-new", pods: []string{"0:r:old", "1:r:old", "2:r:old"}, del: []string{"db-2"}},
		{name: "update waits for the replaced pod", set: testSet(3), update: "db-new", pods: []string{"0:r:old", "1:r:old", "2:n:new"}},
		{name: "update goes down", set: testSet(3), update: "db-new", pods: []string{"0:r:old", "1:r:old", "2:r:new"}, del: []string{"db-1"}},
		{name: "update stops at the partition", set: testSet(3, partition(2)), update: "db-new", pods: []string{"0:r:old", "1:r:old", "2:r:new"}},
		{name: "below the partition the current revision", set: testSet(3, partition(2)), update: "db-new", pods: []string{"0:r:old", "2:r:new"}, create: []PodToCreate{{1, "db-old"}}},
		{name: "maxUnavailable 2", set: testSet(3, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}),
			update: "db-new", pods: []string{"0:r:old", "1:r:old", "2:r:old"}, del: []string{"db-2", "db-1"}},
		{name: "OnDelete waits", set: testSet(2, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}),
			update: "db-new", pods: []string{"0:r:old"}, create: []PodToCreate{{1, "db-new"}}},
		{name: "ordinals start", set: testSet(2, func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }),
			update: "db-old", pods: []string{"0:r:old", "5:r:old"}, create: []PodToCreate{{6, "db-old"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			act := ReconcileStatefulSet(StatefulSetInput{Set: tc.set, UpdateRevision: tc.update, Pods: stsPods(tc.pods...), Claims: tc.claims, Now: stsNow})
			if !slices.Equal(act.Create, tc.create) || !slices.Equal(act.Delete, tc.del) || !slices.Equal(act.DeleteClaims, tc.delPVCs) {
				t.Errorf("create %v, delete %v, delete claims %v; want %v, %v, %v", act.Create, act.Delete, act.DeleteClaims, tc.create, tc.del, tc.delPVCs)
			}
		})
	}
}

func TestStatefulSetStatus(t *testing.T) {
	act := ReconcileStatefulSet(StatefulSetInput{Set: testSet(3), UpdateRevision: "db-new", Pods: stsPods("0:r:old", "1:n:new", "2:d:new"), Now: stsNow})
	st := act.Status
	if st.Replicas != 3 || st.ReadyReplicas != 1 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 1 || st.CurrentRevision != "db-old" || st.UpdateRevision != "db-new" || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
	act = ReconcileStatefulSet(StatefulSetInput{Set: testSet(2), UpdateRevision: "db-new", Pods: stsPods("0:r:new", "1:r:new"), Now: stsNow})
	if act.Status.CurrentRevision != "db-new" || act.Status.CurrentReplicas != 2 {
		t.Errorf("a finished update: status %+v; want the current revision to be the new one", act.Status)
	}
}

func TestNewStatefulSetPod(t *testing.T) {
	set := testSet(3)
	set.Spec.Template.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}, {Name: "tmp"}}
	pod := NewStatefulSetPod(set, &set.Spec.Template, "db-abc", 2)
	if pod.Name != "db-2" || pod.Spec.Hostname != "db-2" || pod.Spec.Subdomain != "db" ||
		pod.Labels[StatefulSetPodNameLabel] != "db-2" || pod.Labels[PodIndexLabel] != "2" || pod.Labels[RevisionLabel] != "db-abc" || pod.Labels["app"] != "db" {
		t.Fatalf("pod %+v", pod.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "sts-uid" || ref.Kind != "StatefulSet" {
		t.Errorf("owner %+v", ref)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[1].PersistentVolumeClaim == nil || pod.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "data-db-2" {
		t.Errorf("volumes %+v; want tmp and the claim data-db-2 in place of the template's data", pod.Spec.Volumes)
	}
	if set.Spec.Template.Labels[RevisionLabel] != "" {
		t.Errorf("the set's template was changed")
	}
	claims := StatefulSetClaims(set, 2)
	if len(claims) != 1 || claims[0].Name != "data-db-2" || claims[0].Labels["app"] != "db" {
		t.Errorf("claims %+v", claims)
	}
	for _, name := range []string{"db-02", "db-", "db--1", "dbx-1", "db-1a"} {
		if _, ok := StatefulSetOrdinal(set, name); ok {
			t.Errorf("%q read as a pod of the set", name)
		}
	}
}

// A set uses the claims "<template>-<set>-<ordinal>" of its templates and
// ordinals in [start, start+replicas), and no other.
func TestStatefulSetUsesClaim(t *testing.T) {
	set := testSet(2, func(s *appsv1.StatefulSet) {
		s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
		s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "logs"}})
	})
	for name, want := range map[string]bool{
		"data-db-1": true, "data-db-2": true, "logs-db-1": true, "logs-db-2": true,
		"data-db-0": false, "data-db-3": false, // ordinals out of range
		"cache-db-1": false, "data-dbx-1": false, "data-db-01": false, "data-db": false, "db-1": false,
	} {
		if got := StatefulSetUsesClaim(set, name); got != want {
			t.Errorf("StatefulSetUsesClaim(%q) = %v; want %v", name, got, want)
		}
	}
}
