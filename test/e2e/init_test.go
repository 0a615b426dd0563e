package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Init containers run one after the other, each to completion; a sidecar
// starts before the app (its startup probe gates the app) and keeps
// running; the app sees what each wrote, in order.
func TestInitContainersAndSidecarStartInOrder(t *testing.T) {
	onEachRuntime(t, initContainersAndSidecarStartInOrder)
}

func initContainersAndSidecarStartInOrder(t *testing.T, n *node) {
	n.apply("web.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  volumes: [{name: work, emptyDir: {}}]
  initContainers:
  - name: first
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo first >> /work/seq"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo second >> /work/seq"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: helper
    image: busybox
    imagePullPolicy: IfNotPresent
    restartPolicy: Always
    command: [sh, -c, "sleep 1; echo helper >> /work/seq; touch /work/helper-up; exec sleep 3600"]
    startupProbe:
      exec: {command: [cat, /work/helper-up]}
      periodSeconds: 1
      failureThreshold: 30
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "cat /work/seq; exec sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
`)
	pod := n.waitPod("web", "running and ready", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning && readyPod(p) })
	for _, name := range []string{"first", "second"} {
		st := containerStatus(pod, name)
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 || st.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: state %+v; want terminated, Completed, exit 0", name, st.State)
		}
	}
	if st := containerStatus(pod, "helper"); st.State.Running == nil || st.Started == nil || !*st.Started {
		t.Errorf("sidecar helper: %+v; want running and started", st)
	}
	logs := n.must("logs", "web", "-c", "app")
	if logs != "first\nsecond\nhelper\n" {
		t.Errorf("the app read %q; want first, second, helper in that order", logs)
	}
	get := n.must("get", "pods")
	if !strings.Contains(get, "web") || !strings.Contains(get, "2/2") || !strings.Contains(get, "Running") {
		t.Errorf("get pods:\n%s\nwant web 2/2 Running (the sidecar counts)", get)
	}
}

// Under restartPolicy Never the sidecar is stopped once the app completed,
// and the pod succeeds.
func TestSidecarStopsAfterTheAppCompletes(t *testing.T) {
	onEachRuntime(t, sidecarStopsAfterTheAppCompletes)
}

func sidecarStopsAfterTheAppCompletes(t *testing.T, n *node) {
	n.apply("job.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: helper, image: busybox, imagePullPolicy: IfNotPresent, restartPolicy: Always, command: [sleep, "3600"]}
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, "sleep 1; echo done"]}
`)
	pod := n.waitPod("job", "succeeded", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	app, helper := containerStatus(pod, "app"), containerStatus(pod, "helper")
	if app.State.Terminated == nil || app.State.Terminated.ExitCode != 0 {
		t.Errorf("app: %+v; want terminated with exit 0", app.State)
	}
	if helper.State.Terminated == nil {
		t.Fatalf("sidecar: %+v; want terminated after the app", helper.State)
	}
	if helper.State.Terminated.FinishedAt.Before(&app.State.Terminated.FinishedAt) {
		t.Errorf("sidecar finished at %v, before the app (%v)", helper.State.Terminated.FinishedAt, app.State.Terminated.FinishedAt)
	}
	if get := n.must("get", "pods", "job"); !strings.Contains(get, "Completed") {
		t.Errorf("get pods job:\n%s\nwant STATUS Completed", get)
	}
}
