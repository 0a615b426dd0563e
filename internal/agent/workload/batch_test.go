package workload

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
