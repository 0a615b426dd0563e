package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/errdefs"
)

// fakeAgent serves fixed pods on a real agent API socket, for commands
// that only read; an update of ephemeral containers is recorded in
// ephemeral and appended to the pod's spec.
type fakeAgent struct {
	noWorkloads
	details   []agentapi.PodDetail
	ephemeral [][]v1.EphemeralContainer
	// objectEvents are events of objects other than pods (workloads, the
	// node), listed after the pods'.
	objectEvents []agentapi.PodEvent
}

func (f *fakeAgent) UpdateEphemeralContainers(_ context.Context, namespace, name string, list []v1.EphemeralContainer) (v1.Pod, error) {
	for i := range f.details {
		if p := &f.details[i].Pod; p.Namespace == namespace && p.Name == name {
			f.ephemeral = append(f.ephemeral, list)
			p.Spec.EphemeralContainers = list
			return *p, nil
		}
	}
	return v1.Pod{}, errdefs.ErrNotFound
}

// noWorkloads is an agent's WorkloadService holding no objects.
type noWorkloads struct{}

func (noWorkloads) ListWorkloads(string, string) (agentapi.WorkloadList, error) {
	return agentapi.WorkloadList{}, nil
}

func (noWorkloads) DescribeWorkload(string, string, string) (agentapi.WorkloadDetail, error) {
	return agentapi.WorkloadDetail{}, errdefs.ErrNotFound
}

func (noWorkloads) DeleteWorkload(context.Context, string, string, string, *int64) (agentapi.DeleteResponse, error) {
	return agentapi.DeleteResponse{}, errdefs.ErrNotFound
}

func (noWorkloads) Scale(context.Context, string, string, string, int32) (agentapi.ApplyResult, error) {
	return agentapi.ApplyResult{}, errdefs.ErrNotFound
}

func (noWorkloads) Rollout(context.Context, string, string, string, agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	return agentapi.ApplyResult{}, errdefs.ErrNotFound
}

func (f *fakeAgent) Apply(context.Context, agentapi.ApplyRequest) (agentapi.ApplyResponse, error) {
	return agentapi.ApplyResponse{}, errdefs.ErrFailedPrecondition
}

func (f *fakeAgent) Unwatch(context.Context, string) (agentapi.DeleteResponse, error) {
	return agentapi.DeleteResponse{}, errdefs.ErrFailedPrecondition
}

func (f *fakeAgent) Delete(context.Context, string, string, *int64) (agentapi.DeleteResponse, error) {
	return agentapi.DeleteResponse{}, errdefs.ErrFailedPrecondition
}

func (f *fakeAgent) ListPods(namespace string) v1.PodList {
	var list v1.PodList
	for _, d := range f.details {
		if namespace == "" || d.Pod.Namespace == namespace {
			list.Items = append(list.Items, d.Pod)
		}
	}
	return list
}

func (f *fakeAgent) DescribePod(namespace, name string) (agentapi.PodDetail, error) {
	for _, d := range f.details {
		if d.Pod.Namespace == namespace && d.Pod.Name == name {
			return d, nil
		}
	}
	return agentapi.PodDetail{}, errdefs.ErrNotFound
}

func (f *fakeAgent) Ready() error { return nil }

func (f *fakeAgent) Node() agentapi.NodeDetail { return agentapi.NodeDetail{} }

func (f *fakeAgent) Pulls(string) agentapi.PullList { return agentapi.PullList{} }

func (f *fakeAgent) ListEvents(namespace string) agentapi.EventList {
	var list agentapi.EventList
	for _, d := range f.details {
		if namespace == "" || d.Pod.Namespace == namespace {
			for _, e := range d.Events {
				list.Items = append(list.Items, agentapi.PodEvent{Namespace: d.Pod.Namespace, Pod: d.Pod.Name, PodUID: string(d.Pod.UID), Event: e})
			}
		}
	}
	for _, e := range f.objectEvents {
		if namespace == "" || e.Namespace == namespace {
			list.Items = append(list.Items, e)
		}
	}
	return list
}

// serveFakeAgent starts f's API (a *fakeAgent, or a type embedding one)
// in a temporary state directory and returns the global flags that point
// berth at it.
func serveFakeAgent(t *testing.T, f agentapi.PodService) []string {
	t.Helper()
	dir := t.TempDir()
	srv, err := agentapi.ListenAPI(filepath.Join(dir, agentapi.SocketName), f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve() //nolint:errcheck // ends with Close
	t.Cleanup(srv.Close)
	return []string{"--root", filepath.Join(dir, "root"), "--state", dir}
}

// runBerth runs berth's root command in this process.
func runBerth(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func testPod(namespace, name string, containers ...string) agentapi.PodDetail {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for i, c := range containers {
		if i == 0 && strings.HasPrefix(c, "init:") {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: strings.TrimPrefix(c, "init:")})
			continue
		}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return agentapi.PodDetail{Pod: p}
}
