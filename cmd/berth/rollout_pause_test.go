package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// pausingAgent holds one Deployment "web" and answers rollout pause and
// resume as the agent does (its errors are the agent's, kubectl's text).
type pausingAgent struct {
	fakeAgent
	d        appsv1.Deployment
	requests []agentapi.RolloutRequest
}

func (p *pausingAgent) Rollout(_ context.Context, resource, _, name string, req agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	p.requests = append(p.requests, req)
	if resource != agentapi.ResourceDeployment {
		return agentapi.ApplyResult{}, &textError{fmt.Sprintf("%s.apps %q pausing is not supported", resource, name), errdefs.ErrInvalidArgument}
	}
	if req.Pause == p.d.Spec.Paused {
		return agentapi.ApplyResult{}, &textError{fmt.Sprintf("deployments.apps %q is already paused", name), errdefs.ErrFailedPrecondition}
	}
	p.d.Spec.Paused = req.Pause
	outcome := "resumed"
	if req.Pause {
		outcome = "paused"
	}
	return agentapi.ApplyResult{Kind: agentapi.KindDeployment, Namespace: "default", Name: name, Outcome: outcome}, nil
}

// textError is an error of an errdefs kind whose text does not repeat it,
// as the agent's rollout errors.
type textError struct {
	msg  string
	kind error
}

func (e *textError) Error() string { return e.msg }
func (e *textError) Unwrap() error { return e.kind }

func (p *pausingAgent) DescribeWorkload(resource, _, name string) (agentapi.WorkloadDetail, error) {
	if resource != agentapi.ResourceDeployment || name != p.d.Name {
		return agentapi.WorkloadDetail{}, errdefs.ErrNotFound
	}
	return agentapi.WorkloadDetail{Deployment: p.d.DeepCopy()}, nil
}

func TestRolloutPauseAndResume(t *testing.T) {
	f := &pausingAgent{d: appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}}
	flags := serveFakeAgent(t, f)
	out, err := runBerth(t, append(flags, "rollout", "pause", "deploy/web")...)
	if err != nil || out != "deployment.apps/web paused\n" || len(f.requests) != 1 || !f.requests[0].Pause {
		t.Fatalf("rollout pause: %q %v (requests %+v)", out, err, f.requests)
	}
	if _, err := runBerth(t, append(flags, "rollout", "pause", "deployment/web")...); err == nil || err.Error() != `deployments.apps "web" is already paused` {
		t.Fatalf("pausing a paused Deployment: %v", err)
	}
	out, err = runBerth(t, append(flags, "rollout", "resume", "deployments/web")...)
	if err != nil || out != "deployment.apps/web resumed\n" || !f.requests[2].Resume {
		t.Fatalf("rollout resume: %q %v (requests %+v)", out, err, f.requests)
	}
	if _, err := runBerth(t, append(flags, "rollout", "pause", "sts/db")...); err == nil || !strings.Contains(err.Error(), `statefulsets.apps "db" pausing is not supported`) {
		t.Fatalf("pausing a StatefulSet: %v", err)
	}
	var apiErr *agentapi.APIError
	if _, err := runBerth(t, append(flags, "rollout", "pause", "ds/logger")...); !errors.As(err, &apiErr) {
		t.Fatalf("pausing a DaemonSet did not reach the agent: %v", err)
	}
}

// A paused Deployment whose template changed: describe shows kubectl's
// conditions and no new ReplicaSet; rollout status waits as kubectl's
// status viewer does (nothing in it is about pausing).
func TestPausedDeploymentDescribeAndStatus(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 3},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(3)), Paused: true,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:2"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, AvailableReplicas: 3, ReadyReplicas: 3, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: v1.ConditionTrue, Reason: workload.ReasonMinimumAvailable},
			{Type: appsv1.DeploymentProgressing, Status: v1.ConditionUnknown, Reason: workload.ReasonPaused, Message: "Deployment is paused"},
		}},
	}
	old := appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(3)), Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1"}}}}},
		Status: appsv1.ReplicaSetStatus{Replicas: 3},
	}
	var out strings.Builder
	if err := describeWorkload(&out, agentapi.WorkloadDetail{Deployment: d, ReplicaSets: []appsv1.ReplicaSet{old}}, d.CreationTimestamp.Time); err != nil {
		t.Fatal(err)
	}
	words := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"Available True MinimumReplicasAvailable Progressing Unknown DeploymentPaused", "OldReplicaSets: web-abc (3/3 replicas created) NewReplicaSet: <none>"} {
		if !strings.Contains(words, want) {
			t.Errorf("describe of a paused Deployment lacks %q:\n%s", want, out.String())
		}
	}
	msg, done, err := rolloutMessage(d)
	if err != nil || done || strings.TrimSpace(msg) != `Waiting for deployment "web" rollout to finish: 0 out of 3 new replicas have been updated...` {
		t.Fatalf("rollout status of a paused Deployment: %q %v %v", msg, done, err)
	}
}
