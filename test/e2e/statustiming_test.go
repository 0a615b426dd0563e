package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// frozenPod is issue 12's pod: stubborn fails its liveness probe and its sh
// (PID 1) ignores SIGTERM, so its kill takes the whole grace period; late
// turns ready a few seconds after it starts, while that kill goes on.
const frozenPod = `
apiVersion: v1
kind: Pod
metadata: {name: frozen}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: stubborn
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap '' TERM; while true; do sleep 1; done"]
    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 1
      failureThreshold: 1
  - name: late
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "sleep 4; touch /tmp/ready; exec sleep 3600"]
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
`

// A readiness result reaches the pod's status at once, as under the
// kubelet (its status manager is updated apart from the pod worker's
// sync), while the sync is held in a 20 s kill of the other container:
// late and the pod show ready well before that kill ends.
func TestReadinessShowsWhileAnotherContainerIsKilled(t *testing.T) {
	onEachRuntime(t, readinessShowsWhileAnotherContainerIsKilled)
}

func readinessShowsWhileAnotherContainerIsKilled(t *testing.T, n *node) {
	n.apply("frozen.yaml", frozenPod)
	n.waitPod("frozen", "both running", func(p v1.Pod) bool { return running("stubborn")(p) && running("late")(p) })
	deadline := time.Now().Add(60 * time.Second)
	for !n.hasEvent("frozen", "Killing") {
		if time.Now().After(deadline) {
			t.Fatalf("stubborn is not killed for its liveness failure after 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	killStarted := time.Now()
	// late turns ready about 4 s after it started; stubborn's kill lasts
	// 20 s from killStarted. 12 s tells the two apart.
	pod := n.waitPodWithin("frozen", "late and the pod ready during stubborn's kill", 12*time.Second, func(p v1.Pod) bool {
		return containerStatus(p, "late").Ready && readyPod(p)
	})
	t.Logf("ready %v after the kill began", time.Since(killStarted).Round(100*time.Millisecond))
	if st := containerStatus(pod, "stubborn"); st.RestartCount != 0 || st.State.Running == nil {
		t.Errorf("stubborn when late showed ready: restarts %d, state %+v; want its first instance, still being killed",
			st.RestartCount, st.State)
	}
}

// A pod that completed (restartPolicy Never, Succeeded) keeps its podIP
// once its sandbox is stopped, as under the kubelet, and after a restart
// of the agent too.
func TestCompletedPodKeepsItsIP(t *testing.T) { onEachRuntime(t, completedPodKeepsItsIP) }

func completedPodKeepsItsIP(t *testing.T, n *node) {
	n.apply("done.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3"]}
`)
	ip := n.waitPod("done", "running with an IP", func(p v1.Pod) bool { return running("app")(p) && p.Status.PodIP != "" }).Status.PodIP
	n.waitPod("done", "Succeeded", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	n.waitSandboxStopped("done")
	check := func(when string) {
		t.Helper()
		pod := n.pod("done")
		if pod.Status.Phase != v1.PodSucceeded || pod.Status.PodIP != ip || len(pod.Status.PodIPs) == 0 || pod.Status.PodIPs[0].IP != ip || pod.Status.HostIP == "" {
			t.Errorf("%s: phase %s podIP %q podIPs %v hostIP %q; want Succeeded, keeping %s", when,
				pod.Status.Phase, pod.Status.PodIP, pod.Status.PodIPs, pod.Status.HostIP, ip)
		}
	}
	check("sandbox stopped")
	n.restartAgent()
	check("after the agent's restart")
}

// waitPodWithin is waitPod with its own deadline.
func (n *node) waitPodWithin(name, what string, within time.Duration, cond func(v1.Pod) bool) v1.Pod {
	n.t.Helper()
	deadline := time.Now().Add(within)
	for {
		detail, err := n.client.DescribePod(context.Background(), "default", name)
		if err == nil {
			n.remember(&detail.Pod)
			if cond(detail.Pod) {
				return detail.Pod
			}
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "pod", name)
			n.t.Fatalf("pod %s: not %s within %v (last error %v)\n%s", name, what, within, err, desc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitSandboxStopped waits until the runtime reports every sandbox of the
// pod not ready (the agent stopped it).
func (n *node) waitSandboxStopped(name string) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sandboxes, _ := n.criObjects(map[string]string{"io.kubernetes.pod.name": name})
		stopped := len(sandboxes) > 0
		for _, sb := range sandboxes {
			stopped = stopped && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("pod %s: its sandbox is not stopped after 30 s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
