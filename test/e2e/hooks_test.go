package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// postStart runs right after the start; on delete preStop runs first and
// the container, which ignores SIGTERM, is killed when the grace period
// runs out.
func TestHooksAndGracePeriod(t *testing.T) { onEachRuntime(t, hooksAndGracePeriod) }

func hooksAndGracePeriod(t *testing.T, n *node) {
	hostDir := t.TempDir()
	n.apply("hooks.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 3
  volumes: [{name: host, hostPath: {path: `+hostDir+`, type: Directory}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap '' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: host, mountPath: /host}]
    lifecycle:
      postStart:
        exec: {command: [sh, -c, "echo started > /host/poststart"]}
      preStop:
        exec: {command: [sh, -c, "echo stopping > /host/prestop"]}
`)
	n.waitPod("hooks", "running", running("app"))
	if data, err := os.ReadFile(filepath.Join(hostDir, "poststart")); err != nil || string(data) != "started\n" {
		t.Errorf("postStart hook output %q, %v; want started (it runs before the container counts as running)", data, err)
	}
	start := time.Now()
	n.must("delete", "pod", "hooks")
	took := time.Since(start)
	if data, err := os.ReadFile(filepath.Join(hostDir, "prestop")); err != nil || string(data) != "stopping\n" {
		t.Errorf("preStop hook output %q, %v; want stopping", data, err)
	}
	if took < 2500*time.Millisecond || took > 10*time.Second {
		t.Errorf("delete took %v; want about the 3 s grace period (the container ignores SIGTERM)", took)
	}
}

// A failing postStart hook kills the container (FailedPostStartHook), and
// the restart policy brings it back.
func TestFailedPostStartHookRestartsTheContainer(t *testing.T) {
	onEachRuntime(t, failedPostStartHookRestartsTheContainer)
}

func failedPostStartHookRestartsTheContainer(t *testing.T, n *node) {
	n.apply("badhook.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    lifecycle:
      postStart:
        exec: {command: [sh, -c, "echo no >&2; exit 7"]}
`)
	n.waitPod("badhook", "restarted after the failed hook", func(p v1.Pod) bool {
		return containerStatus(p, "app").RestartCount >= 1
	})
	desc := n.must("describe", "pod", "badhook")
	if !strings.Contains(desc, "FailedPostStartHook") {
		t.Errorf("describe lacks FailedPostStartHook:\n%s", desc)
	}
}
