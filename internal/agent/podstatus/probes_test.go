package podstatus

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// UpdateProbes turns a status computed before a readiness result into the
// one Compute would give with it: the container ready, ContainersReady and
// Ready True since now; nothing else moves.
func TestUpdateProbesMatchesCompute(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, inits(withStartup(side("proxy"))), withReadiness(ctr("app")), ctr("plain"))
	obs := observed(sandboxes(ready("sb0")), running("p", "sb0", "proxy", 0, 1), running("a", "sb0", "app", 0, 2), running("x", "sb0", "plain", 0, 2))
	in := input(pod, obs)
	in.Probes = map[string]plan.ProbeStatus{"proxy": {ContainerID: "p", Started: true, Ready: true}}
	before := Compute(in)
	if condition(before, v1.PodReady).Status != v1.ConditionFalse {
		t.Fatalf("before the result: Ready %+v; want False", condition(before, v1.PodReady))
	}
	later := now.Add(time.Minute)
	in.Probes["app"] = plan.ProbeStatus{ContainerID: "a", Started: true, Ready: true}
	got := *before.DeepCopy()
	if !UpdateProbes(&got, pod, in.Probes, later) {
		t.Fatalf("UpdateProbes reports no change")
	}
	prev := before
	in.Previous, in.Now = &prev, later
	if want := Compute(in); !reflect.DeepEqual(got, want) {
		t.Errorf("UpdateProbes:\n%+v\nCompute with the result:\n%+v", got, want)
	}
	for _, typ := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
		if c := condition(got, typ); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(later) {
			t.Errorf("%s %+v; want True since %v", typ, c, later)
		}
	}
	if c := condition(got, v1.PodInitialized); c != condition(before, v1.PodInitialized) {
		t.Errorf("Initialized moved: %+v", c)
	}
	if UpdateProbes(&got, pod, in.Probes, later.Add(time.Minute)) {
		t.Errorf("the same results again report a change")
	}
}

// A result for another instance of the container (the one before a
// restart), or for a container the status does not show running, changes
// nothing; losing readiness turns the conditions back.
func TestUpdateProbesOnlyForTheShownInstance(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, nil, withReadiness(ctr("app")))
	in := input(pod, observed(sandboxes(ready("sb0")), running("a2", "sb0", "app", 1, 2)))
	in.Probes = map[string]plan.ProbeStatus{"app": {ContainerID: "a2", Started: true, Ready: true}}
	s := Compute(in)
	stale := map[string]plan.ProbeStatus{"app": {ContainerID: "a1", Started: true}}
	if UpdateProbes(&s, pod, stale, now) || !s.ContainerStatuses[0].Ready {
		t.Errorf("a result of the previous instance changed the status: %+v", s.ContainerStatuses[0])
	}
	unready := map[string]plan.ProbeStatus{"app": {ContainerID: "a2", Started: true}}
	if !UpdateProbes(&s, pod, unready, now) || s.ContainerStatuses[0].Ready || condition(s, v1.PodReady).Status != v1.ConditionFalse {
		t.Errorf("readiness lost: %+v, Ready %+v; want unready, False", s.ContainerStatuses[0], condition(s, v1.PodReady))
	}
	if condition(s, v1.PodReady).Reason != ReasonContainersNotReady {
		t.Errorf("Ready reason %q; want %s", condition(s, v1.PodReady).Reason, ReasonContainersNotReady)
	}
	exitedPod := input(pod, observed(sandboxes(ready("sb0")), exited("a2", "sb0", "app", 1, 1, 2)))
	s = Compute(exitedPod)
	if UpdateProbes(&s, pod, in.Probes, now) || s.ContainerStatuses[0].Ready {
		t.Errorf("a ready result made an exited container ready: %+v", s.ContainerStatuses[0])
	}
}

// A pod whose sandbox is stopped (it completed) keeps the IPs of its
// previous status, as the kubelet's PLEG keeps an exited pod's; a ready
// sandbox's IPs, or none, replace them.
func TestIPsKeptWhileNoSandboxIsReady(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, nil, ctr("app"))
	prev := v1.PodStatus{PodIP: "10.88.0.5", PodIPs: []v1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}}
	in := input(pod, observed(sandboxes(plan.Sandbox{ID: "sb0"}), exited("a", "sb0", "app", 0, 0, 1)))
	in.Previous = &prev
	s := Compute(in)
	if s.Phase != v1.PodSucceeded || s.PodIP != "10.88.0.5" || !reflect.DeepEqual(s.PodIPs, prev.PodIPs) {
		t.Errorf("completed pod: phase %s podIP %q podIPs %v; want Succeeded with %v", s.Phase, s.PodIP, s.PodIPs, prev.PodIPs)
	}
	in.Observed = observed(sandboxes(plan.Sandbox{ID: "sb1", Ready: true, IP: "10.88.0.9"}, plan.Sandbox{ID: "sb0"}))
	if s := Compute(in); s.PodIP != "10.88.0.9" || len(s.PodIPs) != 1 {
		t.Errorf("with a new ready sandbox: %q %v; want its IP only", s.PodIP, s.PodIPs)
	}
	in.Observed = observed(sandboxes(plan.Sandbox{ID: "sb1", Ready: true}))
	if s := Compute(in); s.PodIP != "" || len(s.PodIPs) != 0 {
		t.Errorf("a ready sandbox without an IP: %q %v; want none (it is what the runtime says now)", s.PodIP, s.PodIPs)
	}
}
