package podstatus

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

func mt(t time.Time) metav1.Time { return metav1.NewTime(t) }

func ptr[T any](v T) *T { return &v }

func TestContainerStatusStates(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"), ctr("log"), ctr("new"), ctr("made"))
	app := running("a2", "sb0", "app", 2, 5)
	app.Image, app.ImageRef = "docker.io/example/app:1", "docker.io/example/app@sha256:abc"
	oldApp := exited("a1", "sb0", "app", 1, 1, 3)
	oldApp.Reason, oldApp.Message = "OOMKilled", "out of memory"
	log := exited("l1", "sb0", "log", 0, 0, 2)
	made := withState(running("m1", "sb0", "made", 0, 4), plan.StateCreated)
	in := input(pod, observed(sandboxes(ready("sb0")), log, oldApp, app, made))
	in.RuntimeName = "containerd"
	s := Compute(in)

	want := v1.ContainerStatus{
		Name: "app", Image: "docker.io/example/app:1", ImageID: "docker.io/example/app@sha256:abc",
		ContainerID: "containerd://a2", RestartCount: 2, Ready: true, Started: ptr(true),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(at(5))}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 1, Reason: "OOMKilled", Message: "out of memory", StartedAt: mt(at(3)),
			FinishedAt: mt(at(3).Add(30 * time.Second)), ContainerID: "containerd://a1"}},
	}
	if got := containerStatus(s.ContainerStatuses, "app"); !reflect.DeepEqual(got, want) {
		t.Errorf("app:\n got %+v\nwant %+v", got, want)
	}
	wantLog := v1.ContainerStatus{
		Name: "log", Image: "example/log:1", ContainerID: "containerd://l1", Started: ptr(false),
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
			StartedAt: mt(at(2)), FinishedAt: mt(at(2).Add(30 * time.Second)), ContainerID: "containerd://l1"}},
	}
	if got := containerStatus(s.ContainerStatuses, "log"); !reflect.DeepEqual(got, wantLog) {
		t.Errorf("log:\n got %+v\nwant %+v", got, wantLog)
	}
	if got := containerStatus(s.ContainerStatuses, "new").State.Waiting; got == nil || got.Reason != ReasonContainerCreating {
		t.Errorf("never created: waiting %+v", got)
	}
	if got := containerStatus(s.ContainerStatuses, "made").State.Waiting; got == nil || got.Reason != "" {
		t.Errorf("created: waiting %+v", got)
	}
	var names []string
	for _, st := range s.ContainerStatuses {
		names = append(names, st.Name)
	}
	if !reflect.DeepEqual(names, []string{"app", "log", "new", "made"}) {
		t.Errorf("statuses not in spec order: %v", names)
	}
}

func TestExitReasonFromCode(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, nil, ctr("app"))
	s := Compute(input(pod, observed(sandboxes(ready("sb0")), exited("a", "sb0", "app", 3, 0, 1))))
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != ReasonError || term.ExitCode != 3 {
		t.Errorf("terminated %+v", term)
	}
}

func TestWaitingReasonShown(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"), ctr("img"), ctr("ok"))
	in := input(pod, observed(sandboxes(ready("sb0")), exited("a", "sb0", "app", 1, 4, 1), running("o", "sb0", "ok", 0, 1)))
	in.Waiting = map[string]Waiting{
		"app": {Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container=app pod=web_default(uid-1)"},
		"img": {Reason: "ErrImagePull", Message: "not found"},
		"ok":  {Reason: "Stale", Message: "a running container shows no waiting reason"},
	}
	s := Compute(in)
	app := containerStatus(s.ContainerStatuses, "app")
	if w := app.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != in.Waiting["app"].Message {
		t.Errorf("app waiting %+v", w)
	}
	if term := app.LastTerminationState.Terminated; term == nil || term.ExitCode != 1 || term.ContainerID != "berth://a" {
		t.Errorf("app last termination %+v", term)
	}
	if app.RestartCount != 4 {
		t.Errorf("app restart count %d", app.RestartCount)
	}
	if w := containerStatus(s.ContainerStatuses, "img").State.Waiting; w == nil || w.Reason != "ErrImagePull" {
		t.Errorf("img waiting %+v", w)
	}
	if ok := containerStatus(s.ContainerStatuses, "ok"); ok.State.Running == nil {
		t.Errorf("running container overridden: %+v", ok.State)
	}
	// Under Never nothing is restarted: the terminated state stays.
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	if term := containerStatus(Compute(in).ContainerStatuses, "app").State.Terminated; term == nil {
		t.Error("under Never a waiting reason replaced the terminated state")
	}
}

func TestStartedAndReady(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, inits(ctr("setup"), withStartup(side("proxy"))),
		withStartup(withReadiness(ctr("app"))), withReadiness(ctr("web")), ctr("plain"))
	obs := observed(sandboxes(ready("sb0")),
		exited("s", "sb0", "setup", 0, 0, 1), running("p", "sb0", "proxy", 0, 2),
		running("a", "sb0", "app", 0, 3), running("w", "sb0", "web", 0, 3), running("x", "sb0", "plain", 0, 3))
	cases := []struct {
		name   string
		probes map[string]plan.ProbeStatus
		want   map[string][2]bool // started, ready
	}{
		{"no results", nil, map[string][2]bool{
			"setup": {false, true}, "proxy": {false, false}, "app": {false, false}, "web": {true, false}, "plain": {true, true}}},
		{"started, not ready", map[string]plan.ProbeStatus{
			"proxy": {Started: true}, "app": {ContainerID: "a", Started: true}},
			map[string][2]bool{"proxy": {true, true}, "app": {true, false}}},
		{"ready but not started", map[string]plan.ProbeStatus{"app": {Ready: true}},
			map[string][2]bool{"app": {false, false}}},
		{"all passed", map[string]plan.ProbeStatus{"app": {Started: true, Ready: true}, "web": {Ready: true}},
			map[string][2]bool{"app": {true, true}, "web": {true, true}}},
		{"stale results", map[string]plan.ProbeStatus{"app": {ContainerID: "old", Started: true, Ready: true}},
			map[string][2]bool{"app": {false, false}}},
	}
	for _, tc := range cases {
		in := input(pod, obs)
		in.Probes = tc.probes
		s := Compute(in)
		all := append(append([]v1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
		for name, want := range tc.want {
			st := containerStatus(all, name)
			if st.Started == nil || *st.Started != want[0] || st.Ready != want[1] {
				t.Errorf("%s: %s started=%v ready=%v, want %v", tc.name, name, st.Started, st.Ready, want)
			}
		}
	}
}

func TestUnknownAfterRunning(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	prev := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", RestartCount: 2,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	in := input(pod, observed(sandboxes(ready("sb0")), withState(running("a", "sb0", "app", 2, 1), plan.StateUnknown)))
	in.Previous = prev
	st := Compute(in).ContainerStatuses[0]
	if term := st.State.Terminated; term == nil || term.ExitCode != 137 || term.Reason != ReasonContainerStatusUnknown {
		t.Errorf("state %+v", st.State)
	}
	if st.RestartCount != 3 {
		t.Errorf("restart count %d, want 3", st.RestartCount)
	}
	in.Previous = nil
	if w := Compute(in).ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "" {
		t.Errorf("unknown without running history: %+v", w)
	}
}

func TestVanishedContainer(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	in := input(pod, observed(sandboxes(ready("sb0"))))
	in.Previous = &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", RestartCount: 1,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	st := Compute(in).ContainerStatuses[0]
	if w := st.State.Waiting; w == nil || w.Reason != ReasonContainerCreating {
		t.Errorf("state %+v", st.State)
	}
	if term := st.LastTerminationState.Terminated; term == nil || term.ExitCode != 137 || term.Reason != ReasonContainerStatusUnknown {
		t.Errorf("last termination %+v", st.LastTerminationState)
	}
	if st.RestartCount != 2 {
		t.Errorf("restart count %d, want 2", st.RestartCount)
	}
	// A pod being deleted does not count the vanished run as a restart.
	deleted := metav1.NewTime(now)
	pod.DeletionTimestamp = &deleted
	if st := Compute(in).ContainerStatuses[0]; st.RestartCount != 1 || st.LastTerminationState.Terminated == nil {
		t.Errorf("deleting pod: %+v", st)
	}
	pod.DeletionTimestamp = nil
	// A previously terminated status is kept as it was.
	done := v1.ContainerStatus{Name: "app", RestartCount: 5, State: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}
	in.Previous = &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{done}}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	st = Compute(in).ContainerStatuses[0]
	if st.RestartCount != 5 || st.State.Terminated == nil || st.State.Terminated.Reason != "Completed" {
		t.Errorf("kept status %+v", st)
	}
}

func TestInitContainerStatuses(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, inits(ctr("setup"), side("proxy")), ctr("app"))
	// The init instances were removed; the regular container runs.
	in := input(pod, observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 3)))
	s := Compute(in)
	setup := containerStatus(s.InitContainerStatuses, "setup")
	if term := setup.State.Terminated; term == nil || term.Reason != ReasonCompleted || term.ExitCode != 0 || !setup.Ready {
		t.Errorf("removed init container: %+v", setup)
	}
	if w := containerStatus(s.InitContainerStatuses, "proxy").State.Waiting; w == nil || w.Reason != ReasonPodInitializing {
		t.Errorf("removed sidecar: %+v", w)
	}
	if c := condition(s, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("initialized %+v", c)
	}
	// A failed init container waiting to restart shows the reason; one that exited 0 never does.
	in.Observed = observed(sandboxes(ready("sb0")), exited("s", "sb0", "setup", 1, 0, 1))
	in.Waiting = map[string]Waiting{"setup": {Reason: "CrashLoopBackOff"}}
	if w := Compute(in).InitContainerStatuses[0].State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" {
		t.Errorf("failed init waiting %+v", w)
	}
	in.Observed = observed(sandboxes(ready("sb0")), exited("s", "sb0", "setup", 0, 0, 1))
	if st := Compute(in).InitContainerStatuses[0]; st.State.Terminated == nil || !st.Ready {
		t.Errorf("completed init %+v", st)
	}
}

func TestIPs(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	sb := ready("sb0")
	sb.AdditionalIPs = []string{"fd00::5"}
	in := input(pod, observed(sandboxes(sb)))
	in.HostIPs = []string{"192.168.1.10", "fd00::10"}
	s := Compute(in)
	if s.PodIP != "10.88.0.5" || !reflect.DeepEqual(s.PodIPs, []v1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}) {
		t.Errorf("pod IPs %q %v", s.PodIP, s.PodIPs)
	}
	if s.HostIP != "192.168.1.10" || len(s.HostIPs) != 2 {
		t.Errorf("host IPs %q %v", s.HostIP, s.HostIPs)
	}
	in.Observed = observed(sandboxes(plan.Sandbox{ID: "sb0", IP: "10.88.0.5"}))
	if s := Compute(in); s.PodIP != "" {
		t.Errorf("a sandbox that is not ready gives pod IP %q", s.PodIP)
	}
	pod.Spec.HostNetwork = true
	in.Observed = observed(sandboxes(plan.Sandbox{ID: "sb0", Ready: true, HostNetwork: true}))
	if s := Compute(in); s.PodIP != "192.168.1.10" || len(s.PodIPs) != 2 {
		t.Errorf("host network pod IPs %q %v", s.PodIP, s.PodIPs)
	}
}

func TestEphemeralStatus(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	s := Compute(input(pod, observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 1),
		running("d", "sb0", "debug", 0, 2))))
	if len(s.EphemeralContainerStatuses) != 1 {
		t.Fatalf("ephemeral statuses %+v", s.EphemeralContainerStatuses)
	}
	if st := s.EphemeralContainerStatuses[0]; st.State.Running == nil || st.Ready || st.Started != nil {
		t.Errorf("ephemeral status %+v", st)
	}
	if s.Phase != v1.PodRunning || condition(s, v1.PodReady).Status != v1.ConditionTrue {
		t.Errorf("an ephemeral container changed phase %s or readiness", s.Phase)
	}
}

func TestFromWaits(t *testing.T) {
	got := FromWaits([]plan.Wait{{Name: "app", Reason: plan.ReasonCrashLoopBackOff, Message: "m"}})
	if !reflect.DeepEqual(got, map[string]Waiting{"app": {Reason: "CrashLoopBackOff", Message: "m"}}) {
		t.Errorf("got %v", got)
	}
}
