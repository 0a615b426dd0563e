package agent

import (
	"slices"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// The pod: one container fails its liveness probe and holds its
// kill for the whole grace period (sh as PID 1 ignores SIGTERM), the
// other's readiness probe passes meanwhile. The result reaches the status
// at once, as under the kubelet's status manager, not when the sync that
// kills the first container ends.
func TestProbeResultReachesTheStatusWhileAKillHoldsTheSync(t *testing.T) {
	rt := criclienttest.New()
	var flagUp atomic.Bool
	rt.SetExecResult(func(_ string, cmd []string) int32 {
		switch {
		case slices.Equal(cmd, []string{"healthy"}):
			return 1
		case slices.Equal(cmd, []string{"flag"}) && !flagUp.Load():
			return 1
		}
		return 0
	})
	a := startTestAgent(t, rt)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the agent stops
	rt.HoldStop("doomed", release)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: frozen}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: doomed
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    livenessProbe: {exec: {command: [healthy]}, periodSeconds: 1, failureThreshold: 1}
  - name: late
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    readinessProbe: {exec: {command: [flag]}, periodSeconds: 1}
`)
	waitFor(t, "the liveness kill of doomed is under way", func() bool { return slices.Contains(rt.Calls(), "stop doomed") })
	if pod := a.pod(t, "frozen"); ctrStatus(pod, "late").Ready || ready(pod) {
		t.Fatalf("late is ready before its readiness probe passed: %+v", ctrStatus(pod, "late"))
	}
	flagUp.Store(true)
	waitFor(t, "late and the pod ready while the kill still holds the sync", func() bool {
		pod := a.pod(t, "frozen")
		return ctrStatus(pod, "late").Ready && ready(pod)
	})
	pod := a.pod(t, "frozen")
	if doomed := ctrStatus(pod, "doomed"); doomed.State.Running == nil || doomed.RestartCount != 0 {
		t.Errorf("doomed while its kill is held: %+v; want still running, not restarted", doomed)
	}
	if c := podCondition(pod, v1.ContainersReady); c.Status != v1.ConditionTrue || c.LastTransitionTime.IsZero() {
		t.Errorf("ContainersReady %+v; want True with a transition time", c)
	}
}

// A pod that completed keeps its IP in its status once its sandbox is
// stopped, and a restarted agent shows it too (the runtime reports no IP
// for a stopped sandbox).
func TestCompletedPodKeepsItsIP(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
`)
	var ip string
	waitFor(t, "the pod succeeded and its sandbox is stopped", func() bool {
		pod := first.pod(t, "done")
		ip = pod.Status.PodIP
		return pod.Status.Phase == v1.PodSucceeded && slices.Contains(rt.Calls(), "stopp done")
	})
	pod := first.pod(t, "done")
	if ip == "" || len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != ip || pod.Status.HostIP == "" {
		t.Fatalf("completed pod: podIP %q podIPs %v hostIP %q; want its sandbox's IP kept", ip, pod.Status.PodIPs, pod.Status.HostIP)
	}
	first.stop()
	second := startTestAgentIn(t, rt, dir)
	pod = second.pod(t, "done")
	if pod.Status.Phase != v1.PodSucceeded || pod.Status.PodIP != ip || len(pod.Status.PodIPs) != 1 {
		t.Errorf("after the agent's restart: phase %s podIP %q podIPs %v; want Succeeded with %s", pod.Status.Phase, pod.Status.PodIP, pod.Status.PodIPs, ip)
	}
}

func podCondition(pod v1.Pod, typ v1.PodConditionType) v1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return v1.PodCondition{}
}
