package workload

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSlowStartBatches(t *testing.T) {
	for _, tc := range []struct {
		count, initial int
		want           []int
	}{
		{0, 1, nil},
		{1, 1, []int{1}},
		{7, 1, []int{1, 2, 4}},
		{10, 1, []int{1, 2, 4, 3}},
		{500, 1, []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
		{5, 0, []int{1, 2, 2}},
	} {
		if got := SlowStartBatches(tc.count, tc.initial); !slices.Equal(got, tc.want) {
			t.Errorf("SlowStartBatches(%d, %d) = %v, want %v", tc.count, tc.initial, got, tc.want)
		}
	}
}

func TestReplicaSetCreatesAtMostBurstReplicasPerSync(t *testing.T) {
	replicas := int32(3000)
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
	if got := ReconcileReplicaSet(rs, nil, time.Now()).Create; got != BurstReplicas {
		t.Errorf("3000 replicas, no pods: Create %d, want %d", got, BurstReplicas)
	}
	pods := make([]Pod, 2700)
	for i := range pods {
		pods[i] = Pod{Name: string(rune('a' + i%26)), Phase: "Running"}
	}
	if got := ReconcileReplicaSet(rs, pods, time.Now()).Create; got != 300 {
		t.Errorf("3000 replicas, 2700 pods: Create %d, want 300", got)
	}
}

func TestJobCreatesAtMostMaxPodCreateDeletePerSync(t *testing.T) {
	job := newJob(nil, 800, v1.RestartPolicyNever)
	if got := len(ReconcileJob(job, nil, jobNow).Create); got != MaxPodCreateDeletePerSync {
		t.Errorf("parallelism 800, no pods: %d to create, want %d", got, MaxPodCreateDeletePerSync)
	}
	indexed := newJob(ptr.To(int32(800)), 800, v1.RestartPolicyNever)
	indexed.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	got := ReconcileJob(indexed, nil, jobNow).Create
	if len(got) != MaxPodCreateDeletePerSync || got[0] != 0 || got[len(got)-1] != MaxPodCreateDeletePerSync-1 {
		t.Errorf("indexed, 800 completions: create %d indexes (%v...), want 0..499", len(got), got[:min(len(got), 3)])
	}
}
