package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const statusPod = `
apiVersion: v1
kind: Pod
metadata: {name: shown, labels: {app: shown}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: setup, image: busybox, imagePullPolicy: IfNotPresent, command: ["true"]}
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

// `berth run` in the foreground follows the pod until it is up, and
// Ctrl-C detaches while the pod keeps running; `get -o json`, `get -o
// wide`, `describe` and the agent API report what kubectl would.
func TestRunFollowsThenGetAndDescribeReport(t *testing.T) {
	onEachRuntime(t, runFollowsThenGetAndDescribeReport)
}

func runFollowsThenGetAndDescribeReport(t *testing.T, n *node) {
	cmd := n.berthCmd("run", "-f", n.write("shown.yaml", statusPod))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := readUntil(t, stdout, "the pods are up", 60*time.Second)
	for _, want := range []string{"pod/shown created", "NAME", "Init:0/1", "1/1"} {
		if !strings.Contains(seen, want) && (want != "Init:0/1" || !strings.Contains(seen, "PodInitializing")) {
			t.Errorf("berth run output lacks %q:\n%s", want, seen)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT) // our own child
	if err := cmd.Wait(); err != nil {
		t.Errorf("berth run after Ctrl-C: %v; want exit 0 (detached)", err)
	}

	pods := n.podList()
	if len(pods) != 1 {
		t.Fatalf("get pods -o json: %d pods; want 1", len(pods))
	}
	pod := pods[0]
	if pod.Kind != "Pod" || pod.Status.Phase != v1.PodRunning || pod.Spec.NodeName == "" || pod.Status.PodIP == "" || pod.Status.StartTime == nil {
		t.Errorf("pod: kind %q phase %q node %q ip %q start %v", pod.Kind, pod.Status.Phase, pod.Spec.NodeName, pod.Status.PodIP, pod.Status.StartTime)
	}
	for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady, "PodReadyToStartContainers"} {
		if got := condition(pod, typ); got != v1.ConditionTrue {
			t.Errorf("condition %s = %q; want True", typ, got)
		}
	}
	app := containerStatus(pod, "app")
	if !app.Ready || app.State.Running == nil || !strings.HasPrefix(app.ContainerID, n.rt.name()+"://") || app.ImageID == "" {
		t.Errorf("container status %+v", app)
	}

	wide := n.must("get", "pods", "-o", "wide")
	for _, want := range []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "shown", "1/1", "Running", pod.Status.PodIP} {
		if !strings.Contains(wide, want) {
			t.Errorf("get pods -o wide lacks %q:\n%s", want, wide)
		}
	}
	desc := n.must("describe", "pod", "shown")
	for _, want := range []string{"Name:", "shown", "Init Containers:", "setup:", "Completed", "Containers:", "Conditions:", "Ready", "Events:", "Scheduled", "Started", "QoS Class:"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
	var single v1.Pod
	if err := json.Unmarshal([]byte(n.must("get", "pod", "shown", "-o", "json")), &single); err != nil || single.Name != "shown" {
		t.Errorf("get pod shown -o json: %v (name %q); want the pod itself", err, single.Name)
	}
	if _, errOut, err := n.berth("get", "pod", "missing"); err == nil || !strings.Contains(errOut, "not found") {
		t.Errorf("get of a missing pod: %v %q; want not found", err, errOut)
	}

	// logs -f follows a running container until it exits.
	n.apply("counter.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: counter}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, "for i in 1 2 3 4; do echo line $i; sleep 0.5; done"]}
`)
	n.waitPod("counter", "running", running("app"))
	if logs := n.must("logs", "-f", "counter"); logs != "line 1\nline 2\nline 3\nline 4\n" {
		t.Errorf("logs -f: %q; want the four lines, up to the container's exit", logs)
	}
}

// readUntil reads r until a line contains marker, and returns what it read.
func readUntil(t *testing.T, r io.Reader, marker string, timeout time.Duration) string {
	t.Helper()
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var seen strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q:\n%s", marker, seen.String())
			}
			seen.WriteString(line + "\n")
			if strings.Contains(line, marker) {
				go func() {
					for range lines { // drain until the command exits
					}
				}()
				return seen.String()
			}
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", marker, timeout, seen.String())
		}
	}
}
