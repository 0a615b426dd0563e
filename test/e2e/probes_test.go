package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const probePod = `
apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: flag
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
  - name: web
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
  - name: slow
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    startupProbe:
      exec: {command: [cat, /tmp/started]}
      periodSeconds: 1
      failureThreshold: 120
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`

// Each probe kind through a real pod: exec readiness flips Ready both ways,
// an httpGet liveness failure restarts the container, tcpSocket readiness
// sees the server, and a startup probe holds readiness back until it
// passes.
func TestProbes(t *testing.T) { onEachRuntime(t, probes) }

func probes(t *testing.T, n *node) {
	n.apply("probed.yaml", probePod)
	pod := n.waitPod("probed", "web ready (tcpSocket) and all running", func(p v1.Pod) bool {
		return containerStatus(p, "web").Ready && running("flag")(p) && running("slow")(p)
	})
	if containerStatus(pod, "flag").Ready || readyPod(pod) {
		t.Fatalf("flag is ready before /tmp/ready exists: %+v", containerStatus(pod, "flag"))
	}
	slow := containerStatus(pod, "slow")
	if slow.Ready || slow.Started == nil || *slow.Started {
		t.Errorf("slow before its startup probe passed: ready %v started %v; want neither", slow.Ready, slow.Started)
	}

	if _, err := n.exec("probed", "flag", "touch", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	n.waitPod("probed", "flag ready", func(p v1.Pod) bool { return containerStatus(p, "flag").Ready })
	if _, err := n.exec("probed", "slow", "touch", "/tmp/started"); err != nil {
		t.Fatal(err)
	}
	n.waitPod("probed", "the pod ready once slow started", readyPod)

	if _, err := n.exec("probed", "flag", "rm", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	n.waitPod("probed", "flag not ready again", func(p v1.Pod) bool {
		return !containerStatus(p, "flag").Ready && condition(p, v1.PodReady) == v1.ConditionFalse
	})

	if _, err := n.exec("probed", "web", "rm", "/www/healthz"); err != nil {
		t.Fatal(err)
	}
	pod = n.waitPod("probed", "web restarted by its liveness probe", func(p v1.Pod) bool {
		st := containerStatus(p, "web")
		return st.RestartCount >= 1 && st.State.Running != nil
	})
	if !n.hasEvent("probed", "Unhealthy") || !n.hasEvent("probed", "Killing") {
		t.Errorf("want Unhealthy and Killing events after the liveness failure")
	}
	desc := n.must("describe", "pod", "probed")
	if !strings.Contains(desc, "Liveness probe failed") || !strings.Contains(desc, "failed liveness probe, will be restarted") {
		t.Errorf("describe lacks the liveness events:\n%s", desc)
	}
	if st := containerStatus(pod, "flag"); st.RestartCount != 0 {
		t.Errorf("readiness failures restarted flag %d times; readiness never restarts", st.RestartCount)
	}
}
