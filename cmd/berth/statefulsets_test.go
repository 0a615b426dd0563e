package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func TestStatefulSetAndClaimTables(t *testing.T) {
	now := time.Unix(10000, 0)
	created := metav1.NewTime(now.Add(-90 * time.Second))
	list := agentapi.WorkloadList{StatefulSets: []appsv1.StatefulSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", CreationTimestamp: created},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)), Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "db", Image: "busybox:1.36"}}}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 2},
	}}}
	var out bytes.Buffer
	if err := writeWorkloadTable(&out, list, agentapi.ResourceStatefulSet, false, true, now); err != nil {
		t.Fatal(err)
	}
	if want := "NAME   READY   AGE   CONTAINERS   IMAGES\ndb     2/3     90s   db           busybox:1.36\n"; out.String() != want {
		t.Fatalf("statefulsets -o wide:\n%s\nwant\n%s", out.String(), want)
	}
	deleting := metav1.NewTime(now)
	claims := agentapi.WorkloadList{PersistentVolumeClaims: []v1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "default", CreationTimestamp: created},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pvc-1", StorageClassName: ptr.To("")},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default", CreationTimestamp: created, DeletionTimestamp: &deleting},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pvc-2", StorageClassName: ptr.To("fast")},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}},
	}}}
	out.Reset()
	if err := writeWorkloadTable(&out, claims, agentapi.ResourcePersistentVolumeClaim, false, false, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "NAME        STATUS        VOLUME   CAPACITY   ACCESS MODES   STORAGECLASS   VOLUMEATTRIBUTESCLASS   AGE") ||
		!strings.HasPrefix(lines[1], "data-db-0   Bound         pvc-1    1Gi        RWO            <unset>        <unset>                 90s") ||
		!strings.HasPrefix(lines[2], "x           Terminating   pvc-2               RWOP           fast") {
		t.Fatalf("pvc:\n%s", out.String())
	}
}

func TestStatefulSetRolloutMessages(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}}
	steps := []struct {
		status appsv1.StatefulSetStatus
		want   string
		done   bool
	}{
		{appsv1.StatefulSetStatus{ObservedGeneration: 1}, "Waiting for statefulset spec update to be observed...", false},
		{appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 1}, "Waiting for 2 pods to be ready...", false},
		{appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-a", UpdateRevision: "db-b"}, "waiting for statefulset rolling update to complete 1 pods at revision db-b...", false},
		{appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 3, CurrentReplicas: 3, CurrentRevision: "db-b", UpdateRevision: "db-b"}, "statefulset rolling update complete 3 pods at revision db-b...", true},
	}
	for _, step := range steps {
		s.Status = step.status
		msg, done, err := statefulSetRolloutMessage(s)
		if err != nil || strings.TrimSpace(msg) != step.want || done != step.done {
			t.Errorf("status %+v: %q %v %v; want %q %v", step.status, msg, done, err, step.want, step.done)
		}
	}
	s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	if _, _, err := statefulSetRolloutMessage(s); err == nil || !strings.Contains(err.Error(), "only available for RollingUpdate") {
		t.Errorf("OnDelete: %v", err)
	}
}

func TestDescribeClaim(t *testing.T) {
	detail := agentapi.WorkloadDetail{UsedBy: []string{"db-0"}, PersistentVolumeClaim: &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "default", Finalizers: []string{"kubernetes.io/pvc-protection"}},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pvc-1", StorageClassName: ptr.To("standard")},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	var out bytes.Buffer
	if err := describeWorkload(&out, detail, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"StorageClass:  standard\n", "Status:        Bound\n", "Volume:        pvc-1\n", "Capacity:      1Gi\n",
		"Access Modes:  RWO\n", "Used By:       db-0\n", "Finalizers:    [kubernetes.io/pvc-protection]\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe pvc lacks %q:\n%s", want, out.String())
		}
	}
}

func TestStatefulSetHistory(t *testing.T) {
	var out bytes.Buffer
	revs := []appsv1.ControllerRevision{{Revision: 3}, {Revision: 1, ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/change-cause": "first"}}}}
	if err := statefulSetHistory(&out, "db", revs); err != nil {
		t.Fatal(err)
	}
	if want := "statefulset.apps/db\nREVISION  CHANGE-CAUSE\n1         first\n3         <none>\n"; out.String() != want {
		t.Errorf("history:\n%s\nwant\n%s", out.String(), want)
	}
}
