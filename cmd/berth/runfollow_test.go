package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// scriptedAgent serves one pod, pending while its image is pulled, then
// running and ready; what berth run does not ask is fakeAgent's.
type scriptedAgent struct {
	fakeAgent
	mu    sync.Mutex
	lists int // ListPods calls: the pod runs from the len(pulls)th on
	pulls []agentapi.ImagePull
}

func (s *scriptedAgent) Apply(context.Context, agentapi.ApplyRequest) (agentapi.ApplyResponse, error) {
	return agentapi.ApplyResponse{}, nil
}
func (s *scriptedAgent) Unwatch(context.Context, string) (agentapi.DeleteResponse, error) {
	return agentapi.DeleteResponse{}, nil
}
func (s *scriptedAgent) Delete(context.Context, string, string, *int64) (agentapi.DeleteResponse, error) {
	return agentapi.DeleteResponse{}, nil
}
func (s *scriptedAgent) DescribePod(string, string) (agentapi.PodDetail, error) {
	return agentapi.PodDetail{}, nil
}

func (s *scriptedAgent) ListPods(string) v1.PodList {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}, Status: v1.PodStatus{Phase: v1.PodPending}}
	if s.lists >= len(s.pulls) {
		pod.Status.Phase = v1.PodRunning
		pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	}
	return v1.PodList{Items: []v1.Pod{pod}}
}

// Pulls are the pulls in turn, one per ListPods: berth run asks for both
// at each poll.
func (s *scriptedAgent) Pulls(string) agentapi.PullList {
	s.mu.Lock()
	defer s.mu.Unlock()
	return agentapi.PullList{Items: s.pulls[min(max(s.lists-1, 0), len(s.pulls)-1):][:1]}
}

// syncBuffer is a writer read while the follower writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func followScripted(t *testing.T, svc *scriptedAgent, quiet bool) (status, progress string) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), agentapi.SocketName)
	srv, err := agentapi.ListenAPI(socket, svc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve() //nolint:errcheck // ends with Close
	defer srv.Close()
	var out, errOut syncBuffer
	pods := followed("web")
	f := &follower{client: agentapi.NewClient(socket), pods: pods, out: &out}
	if !quiet {
		f.pulls = newPullDisplay(&errOut, false, nil, time.Now, time.Now().Add(-time.Minute), pods)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.follow(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "the pods are up") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

func TestFollowShowsThePullThenThePodUp(t *testing.T) {
	start := time.Now()
	pull := agentapi.ImagePull{Namespace: "default", Pod: "web", PodUID: "u1", Image: "busybox", State: agentapi.PullPulling, Started: start}
	ended := pull
	ended.State, ended.Ended, ended.Size = agentapi.PullDone, start.Add(time.Second), 1_000_000
	status, progress := followScripted(t, &scriptedAgent{pulls: []agentapi.ImagePull{pull, pull, ended}}, false)
	if progress != "pulling busybox\npulled busybox in 1.0s (1MB)\n" {
		t.Errorf("progress on stderr: %q", progress)
	}
	for _, want := range []string{"Pending", "Running", "the pods are up", "detached"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lines lack %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "pull") {
		t.Errorf("pull progress on stdout:\n%s", status)
	}
	_, progress = followScripted(t, &scriptedAgent{pulls: []agentapi.ImagePull{pull, ended}}, true)
	if progress != "" {
		t.Errorf("-q showed %q", progress)
	}
}
