package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// runningPodWithLog is a pod labelled app=logs whose container c runs,
// with its log file.
func runningPodWithLog(t *testing.T, name, content string) (agentapi.PodDetail, string) {
	d := testPod("default", name, "c")
	d.Pod.Labels = map[string]string{"app": "logs"}
	d.Pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", ContainerID: "berth://id-" + name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	d.LogPaths = map[string]string{"id-" + name: path}
	return d, path
}

// logs -l -f follows every matching pod side by side, each line whole,
// until interrupted; more pods than --max-log-requests are refused.
func TestLogsFollowSelector(t *testing.T) {
	la, pathA := runningPodWithLog(t, "la", "2026-11-24T12:00:00Z stdout F a1\n2026-11-24T12:00:01Z stdout F a2\n")
	lb, _ := runningPodWithLog(t, "lb", "2026-11-24T12:00:00Z stdout F b1\n2026-11-24T12:00:01Z stdout P b")
	flags := serveFakeAgent(t, &fakeAgent{details: []agentapi.PodDetail{la, lb}})
	if out, err := runBerth(t, append(flags, "logs", "-l", "app=logs", "-f", "--max-log-requests", "1")...); err == nil || !strings.Contains(err.Error(), "matches 2 pods") {
		t.Errorf("following 2 pods with --max-log-requests 1: %v, %q; want a refusal", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	var out lockedBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(flags, "logs", "-l", "app=logs", "-f", "--tail", "1", "--prefix"))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitOutput := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("output %q; want %q in it", out.String(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitOutput("[pod/la/c] a2\n")
	waitOutput("[pod/lb/c] b1\n")
	f, err := os.OpenFile(pathA, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("2026-11-24T12:00:02Z stdout F a3\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	waitOutput("[pod/la/c] a3\n")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("logs -f ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not end when its context did")
	}
	if strings.Contains(out.String(), "[pod/lb/c] b\n") {
		t.Errorf("an unfinished record was printed: %q", out.String())
	}
}

// berth logs -f follows while the agent says the same container instance
// runs; an agent that does not answer is asked again until it has been
// silent for unansweredLimit, and a pod gone ends the follow quietly.
func TestLogsFollowRunningCheck(t *testing.T) {
	d, _ := runningPodWithLog(t, "web", "")
	other := d
	other.Pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", ContainerID: "berth://id-next", State: d.Pod.Status.ContainerStatuses[0].State}}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		serving []agentapi.PodDetail
		want    bool
	}{
		{"the same instance runs", []agentapi.PodDetail{d}, true},
		{"another instance runs", []agentapi.PodDetail{other}, false},
		{"the pod is gone", nil, false},
	} {
		flags := serveFakeAgent(t, &fakeAgent{details: tc.serving})
		r := &runningCheck{ctx: ctx, client: agentapi.NewClient(filepath.Join(flags[3], agentapi.SocketName)), detail: d, name: "c"}
		if got, err := r.running(); got != tc.want || err != nil {
			t.Errorf("%s: running %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	silent := &runningCheck{ctx: ctx, client: agentapi.NewClient(filepath.Join(t.TempDir(), "none.sock")), detail: d, name: "c"}
	if got, err := silent.running(); !got || err != nil {
		t.Errorf("an agent not answering once: running %v, %v; want true, asked again", got, err)
	}
	silent.unanswered = time.Now().Add(-unansweredLimit)
	if got, err := silent.running(); got || err == nil || !strings.Contains(err.Error(), `container "c" in pod web`) {
		t.Errorf("an agent silent for %s: running %v, %v; want an error naming the container", unansweredLimit, got, err)
	}
}

// berth logs prints the whole current file, however large (the follower
// reads it in parts between two looks at the log).
func TestLogsPrintsALargeLogWhole(t *testing.T) {
	var log strings.Builder
	lines := lookEvery/32 + 1000
	for i := range lines {
		fmt.Fprintf(&log, "2026-11-24T12:00:00Z stdout F line %d\n", i)
	}
	if log.Len() <= lookEvery {
		t.Fatalf("the log is %d bytes; want more than %d", log.Len(), lookEvery)
	}
	d, _ := runningPodWithLog(t, "big", log.String())
	flags := serveFakeAgent(t, &fakeAgent{details: []agentapi.PodDetail{d}})
	out, err := runBerth(t, append(flags, "logs", "big")...)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != lines || got[len(got)-1] != fmt.Sprintf("line %d", lines-1) {
		t.Errorf("%d lines, the last %q; want %d", len(got), got[len(got)-1], lines)
	}
}
