package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

type condWant struct {
	status          v1.ConditionStatus
	reason, message string
}

func TestConditions(t *testing.T) {
	sb := sandboxes(ready("sb0"))
	cases := []struct {
		name string
		in   Input
		want map[v1.PodConditionType]condWant
	}{{
		name: "all running and ready",
		in: input(newPod(v1.RestartPolicyAlways, inits(ctr("setup"), side("proxy")), ctr("app")),
			observed(sb, exited("s", "sb0", "setup", 0, 0, 1), running("p", "sb0", "proxy", 0, 2),
				running("a", "sb0", "app", 0, 3))),
		want: map[v1.PodConditionType]condWant{
			v1.PodReadyToStartContainers: {status: v1.ConditionTrue},
			v1.PodInitialized:            {status: v1.ConditionTrue},
			v1.ContainersReady:           {status: v1.ConditionTrue},
			v1.PodReady:                  {status: v1.ConditionTrue},
			v1.PodScheduled:              {status: v1.ConditionTrue},
		},
	}, {
		name: "readiness probe not yet passed",
		in: input(newPod(v1.RestartPolicyAlways, nil, withReadiness(ctr("app")), withReadiness(ctr("log")), ctr("web")),
			observed(sb, running("a", "sb0", "app", 0, 1), running("l", "sb0", "log", 0, 1), running("w", "sb0", "web", 0, 1))),
		want: map[v1.PodConditionType]condWant{
			v1.ContainersReady: {v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app log]"},
			v1.PodReady:        {v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app log]"},
			v1.PodInitialized:  {status: v1.ConditionTrue},
		},
	}, {
		name: "init container running",
		in: input(newPod(v1.RestartPolicyAlways, inits(ctr("setup"), ctr("migrate")), ctr("app")),
			observed(sb, running("s", "sb0", "setup", 0, 1))),
		want: map[v1.PodConditionType]condWant{
			v1.PodInitialized:  {v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [setup migrate]"},
			v1.ContainersReady: {v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app]"},
		},
	}, {
		name: "sidecar startup pending",
		in: input(newPod(v1.RestartPolicyAlways, inits(withStartup(side("proxy"))), ctr("app")),
			observed(sb, running("p", "sb0", "proxy", 0, 1))),
		want: map[v1.PodConditionType]condWant{
			v1.PodInitialized:  {v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [proxy]"},
			v1.ContainersReady: {v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [proxy app]"},
		},
	}, {
		name: "succeeded",
		in: input(newPod(v1.RestartPolicyNever, inits(ctr("setup")), ctr("job")),
			observed(sb, exited("s", "sb0", "setup", 0, 0, 1), exited("j", "sb0", "job", 0, 0, 2))),
		want: map[v1.PodConditionType]condWant{
			v1.PodInitialized:  {v1.ConditionTrue, ReasonPodCompleted, ""},
			v1.ContainersReady: {v1.ConditionFalse, ReasonPodCompleted, ""},
			v1.PodReady:        {v1.ConditionFalse, ReasonPodCompleted, ""},
		},
	}, {
		name: "failed",
		in: input(newPod(v1.RestartPolicyNever, nil, ctr("job")),
			observed(sb, exited("j", "sb0", "job", 2, 0, 2))),
		want: map[v1.PodConditionType]condWant{
			v1.ContainersReady: {v1.ConditionFalse, ReasonPodFailed, ""},
			v1.PodReady:        {v1.ConditionFalse, ReasonPodFailed, ""},
		},
	}, {
		name: "sandbox not ready",
		in: input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			observed(sandboxes(plan.Sandbox{ID: "sb0"}), exited("a", "sb0", "app", 137, 0, 1))),
		want: map[v1.PodConditionType]condWant{
			v1.PodReadyToStartContainers: {status: v1.ConditionFalse},
		},
	}, {
		name: "readiness gate without condition",
		in: func() Input {
			p := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			return input(p, observed(sb, running("a", "sb0", "app", 0, 1)))
		}(),
		want: map[v1.PodConditionType]condWant{
			v1.ContainersReady: {status: v1.ConditionTrue},
			v1.PodReady:        {v1.ConditionFalse, ReasonReadinessGatesNotReady, `readiness gate "example.com/lb" has no condition`},
		},
	}, {
		name: "readiness gate true",
		in: func() Input {
			p := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}
			return input(p, observed(sb, running("a", "sb0", "app", 0, 1)))
		}(),
		want: map[v1.PodConditionType]condWant{
			v1.PodReady:      {status: v1.ConditionTrue},
			"example.com/lb": {status: v1.ConditionTrue},
		},
	}}
	for _, tc := range cases {
		s := Compute(tc.in)
		for typ, want := range tc.want {
			c := condition(s, typ)
			if c.Status != want.status || c.Reason != want.reason || c.Message != want.message {
				t.Errorf("%s: %s = %s/%q/%q, want %s/%q/%q", tc.name, typ,
					c.Status, c.Reason, c.Message, want.status, want.reason, want.message)
			}
		}
	}
}

func TestConditionOrder(t *testing.T) {
	p := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionTrue}}
	s := Compute(input(p, observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 1))))
	var got []v1.PodConditionType
	for _, c := range s.Conditions {
		got = append(got, c.Type)
	}
	want := []v1.PodConditionType{"example.com/lb", v1.PodReadyToStartContainers, v1.PodInitialized,
		v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	if len(got) != len(want) {
		t.Fatalf("conditions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("conditions %v, want %v", got, want)
		}
	}
}

func TestTransitionTimes(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, withReadiness(ctr("app")))
	obs := observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 1))
	in := input(pod, obs)
	first := Compute(in)
	for _, c := range first.Conditions {
		if !c.LastTransitionTime.Time.Equal(now) {
			t.Fatalf("first status: %s transition %v", c.Type, c.LastTransitionTime)
		}
	}
	// A minute later the readiness probe passes: only Ready and ContainersReady move.
	later := now.Add(time.Minute)
	in.Now, in.Previous = later, &first
	in.Probes = map[string]plan.ProbeStatus{"app": {ContainerID: "a", Ready: true}}
	second := Compute(in)
	wantTimes := map[v1.PodConditionType]time.Time{
		v1.PodReadyToStartContainers: now, v1.PodInitialized: now, v1.PodScheduled: now,
		v1.PodReady: later, v1.ContainersReady: later,
	}
	for typ, want := range wantTimes {
		if got := condition(second, typ).LastTransitionTime.Time; !got.Equal(want) {
			t.Errorf("%s transition %v, want %v", typ, got, want)
		}
	}
	// Nothing changes: every time stays, including the start time.
	in.Now, in.Previous = later.Add(time.Minute), &second
	third := Compute(in)
	for typ, want := range wantTimes {
		if got := condition(third, typ).LastTransitionTime.Time; !got.Equal(want) {
			t.Errorf("unchanged %s transition %v, want %v", typ, got, want)
		}
	}
	if !third.StartTime.Time.Equal(now) {
		t.Errorf("start time %v, want %v", third.StartTime, now)
	}
}

func TestStartTimeFromAppliedStatus(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	applied := metav1.NewTime(t0)
	pod.Status.StartTime = &applied
	if s := Compute(input(pod, observed(nil))); !s.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v", s.StartTime)
	}
}

// status.observedGeneration and each condition's are the pod's generation
// (KEP-5067); the status's never goes back; kubelet leaves
// AllContainersRestarting without one.
func TestObservedGeneration(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, withRule(ctr("app"), "RestartAllContainers", 42))
	pod.Generation = 3
	in := input(pod, observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 1)))
	s := Compute(in)
	if s.ObservedGeneration != 3 {
		t.Errorf("status.observedGeneration %d; want 3", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		want := int64(3)
		if c.Type == ConditionAllContainersRestarting {
			want = 0
		}
		if c.ObservedGeneration != want {
			t.Errorf("%s: observedGeneration %d; want %d", c.Type, c.ObservedGeneration, want)
		}
	}
	in.Previous = &v1.PodStatus{ObservedGeneration: 4}
	if s := Compute(in); s.ObservedGeneration != 4 {
		t.Errorf("after a status at 4: %d; want 4 (never back)", s.ObservedGeneration)
	}
	pod.Generation = 5
	probes := map[string]plan.ProbeStatus{"app": {ContainerID: "a", Ready: false}}
	withProbe := *pod
	withProbe.Spec.Containers = []v1.Container{withReadiness(pod.Spec.Containers[0])}
	if !UpdateProbes(&s, &withProbe, probes, now) || condition(s, v1.PodReady).ObservedGeneration != 5 {
		t.Errorf("UpdateProbes: Ready %+v; want observedGeneration 5", condition(s, v1.PodReady))
	}
}
