package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func waiting(reason string) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
}

func terminated(code int32, reason string) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
}

var runningState = v1.ContainerState{Running: &v1.ContainerStateRunning{}}

// summaryPod has two init containers (the second a sidecar) and one app.
func summaryPod(phase v1.PodPhase, inits, apps []v1.ContainerStatus) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	return &v1.Pod{
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
			Containers:     []v1.Container{{Name: "app"}},
		},
		Status: v1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: apps},
	}
}

func TestSummarizePodFollowsKubectl(t *testing.T) {
	started := true
	cases := []struct {
		name     string
		pod      *v1.Pod
		status   string
		ready    string
		restarts int
	}{
		{"first init running", summaryPod(v1.PodPending,
			[]v1.ContainerStatus{{Name: "init", State: runningState}, {Name: "side", State: waiting("PodInitializing")}},
			[]v1.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}), "Init:0/2", "0/2", 0},
		{"init crash looping", summaryPod(v1.PodPending,
			[]v1.ContainerStatus{{Name: "init", State: waiting("CrashLoopBackOff"), RestartCount: 3}, {Name: "side", State: waiting("PodInitializing")}},
			[]v1.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}), "Init:CrashLoopBackOff", "0/2", 3},
		{"init failed", summaryPod(v1.PodFailed,
			[]v1.ContainerStatus{{Name: "init", State: terminated(2, "Error")}, {Name: "side", State: waiting("PodInitializing")}},
			[]v1.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}), "Init:Error", "0/2", 0},
		{"app starting", summaryPod(v1.PodPending,
			[]v1.ContainerStatus{{Name: "init", State: terminated(0, "Completed")}, {Name: "side", State: runningState, Started: &started, Ready: true}},
			[]v1.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}), "PodInitializing", "1/2", 0},
		{"running", summaryPod(v1.PodRunning,
			[]v1.ContainerStatus{{Name: "init", State: terminated(0, "Completed")}, {Name: "side", State: runningState, Started: &started, Ready: true, RestartCount: 1}},
			[]v1.ContainerStatus{{Name: "app", State: runningState, Ready: true, RestartCount: 2}}), "Running", "2/2", 3},
		{"app crash looping", summaryPod(v1.PodRunning,
			[]v1.ContainerStatus{{Name: "init", State: terminated(0, "Completed")}, {Name: "side", State: runningState, Started: &started, Ready: true}},
			[]v1.ContainerStatus{{Name: "app", State: waiting("CrashLoopBackOff"), RestartCount: 4}}), "CrashLoopBackOff", "1/2", 4},
		{"completed", summaryPod(v1.PodSucceeded,
			[]v1.ContainerStatus{{Name: "init", State: terminated(0, "Completed")}, {Name: "side", State: terminated(137, "Error"), Started: &started}},
			[]v1.ContainerStatus{{Name: "app", State: terminated(0, "Completed")}}), "Completed", "0/2", 0},
		{"killed by a signal", summaryPod(v1.PodFailed,
			[]v1.ContainerStatus{{Name: "init", State: terminated(0, "Completed")}, {Name: "side", State: terminated(0, "Completed")}},
			[]v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}}}), "Signal:9", "0/2", 0},
	}
	for _, c := range cases {
		s := summarizePod(c.pod)
		if s.status != c.status || fmtReady(s) != c.ready || s.restarts != c.restarts {
			t.Errorf("%s: %s %s %d; want %s %s %d", c.name, fmtReady(s), s.status, s.restarts, c.ready, c.status, c.restarts)
		}
	}
	deleting := summaryPod(v1.PodRunning, nil, []v1.ContainerStatus{{Name: "app", State: runningState, Ready: true}})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if s := summarizePod(deleting); s.status != "Terminating" {
		t.Errorf("a deleted running pod shows %q; want Terminating", s.status)
	}
}

func fmtReady(s podSummary) string { return fmt.Sprintf("%d/%d", s.ready, s.total) }

func TestDescribeShowsContainersConditionsAndEvents(t *testing.T) {
	now := time.Now()
	pod := summaryPod(v1.PodRunning, nil, []v1.ContainerStatus{{Name: "app", State: runningState, Ready: true, RestartCount: 1,
		LastTerminationState: terminated(3, "Error"), ContainerID: "berth://abc"}})
	pod.Name, pod.Namespace = "web", "default"
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	var out bytes.Buffer
	err := describePod(&out, agentapi.PodDetail{Pod: *pod, Events: []agentapi.Event{
		{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container app", Count: 3, FirstTime: now.Add(-time.Minute), LastTime: now},
	}}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Name:", "web", "Containers:", "app:", "berth://abc", "Last State:", "Exit Code:", "Restart Count:", "Conditions:", "Ready", "True", "Events:", "BackOff", "(x3 over 60s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
}

// describe lists ephemeral containers in their own section, as kubectl
// does, and get counts them neither as ready nor in the total.
func TestEphemeralContainersInDescribeAndGet(t *testing.T) {
	pod := summaryPod(v1.PodRunning, nil, []v1.ContainerStatus{{Name: "app", State: runningState, Ready: true}})
	pod.Name, pod.Namespace = "web", "default"
	pod.Spec.InitContainers = nil
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger-x", Image: "busybox", Command: []string{"sh"}},
		TargetContainerName:      "app",
	}}
	pod.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "debugger-x", State: runningState, ContainerID: "berth://dbg"}}
	var out bytes.Buffer
	if err := describePod(&out, agentapi.PodDetail{Pod: *pod}, time.Now()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	i := strings.Index(text, "Ephemeral Containers:")
	if i < 0 || !strings.Contains(text[i:], "debugger-x:") || !strings.Contains(text[i:], "berth://dbg") || !strings.Contains(text[i:], "Running") {
		t.Errorf("describe lacks the Ephemeral Containers section with debugger-x running:\n%s", text)
	}
	if s := summarizePod(pod); fmtReady(s) != "1/1" || s.status != "Running" {
		t.Errorf("get shows %s %s; want 1/1 Running (an ephemeral container does not count)", fmtReady(s), s.status)
	}
}
