package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func TestWorkloadTablesHaveKubectlColumns(t *testing.T) {
	now := time.Unix(10000, 0)
	created := metav1.NewTime(now.Add(-90 * time.Second))
	list := agentapi.WorkloadList{Deployments: []appsv1.Deployment{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: created},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(3))},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
	}}}
	var out bytes.Buffer
	if err := writeWorkloadTable(&out, list, agentapi.ResourceDeployment, false, false, now); err != nil {
		t.Fatal(err)
	}
	want := "NAME   READY   UP-TO-DATE   AVAILABLE   AGE\nweb    2/3     3            2           90s\n"
	if out.String() != want {
		t.Fatalf("deployments:\n%s\nwant\n%s", out.String(), want)
	}
	rsList := agentapi.WorkloadList{ReplicaSets: []appsv1.ReplicaSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: "default", CreationTimestamp: created},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1},
	}}}
	out.Reset()
	if err := writeWorkloadTable(&out, rsList, agentapi.ResourceReplicaSet, true, true, now); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(out.String(), "\n"); !strings.HasPrefix(lines[0], "NAMESPACE   NAME       DESIRED   CURRENT   READY   AGE   CONTAINERS   IMAGES   SELECTOR") ||
		!strings.Contains(lines[1], "default     web-5d8f   3         3         1       90s") || !strings.HasSuffix(lines[1], "app=web") {
		t.Fatalf("replicasets -A -o wide:\n%s", out.String())
	}
}

func TestRolloutMessages(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(3))}}
	steps := []struct {
		status appsv1.DeploymentStatus
		want   string
		done   bool
	}{
		{appsv1.DeploymentStatus{ObservedGeneration: 1}, "Waiting for deployment spec update to be observed...", false},
		{appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1}, `Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...`, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3}, `Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...`, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}, `Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...`, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}, `deployment "web" successfully rolled out`, true},
	}
	for _, s := range steps {
		d.Status = s.status
		msg, done, err := rolloutMessage(d)
		if err != nil || strings.TrimSpace(msg) != s.want || done != s.done {
			t.Errorf("status %+v: %q %v %v; want %q %v", s.status, msg, done, err, s.want, s.done)
		}
	}
}

func TestWorkloadResourceNames(t *testing.T) {
	for in, want := range map[string]string{"deploy": "deployments", "deployments.apps": "deployments", "rs": "replicasets", "ReplicaSet": "replicasets"} {
		if got, ok := workloadResource(in); !ok || got != want {
			t.Errorf("workloadResource(%q) = %q, %v", in, got, ok)
		}
	}
	if _, _, err := splitTypeName("deploy"); err == nil {
		t.Error("deploy without a name accepted")
	}
}
