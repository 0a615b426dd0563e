package e2e

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// kill -9 of the agent (of berth serve with it, on berth): the pod keeps
// running, and the restarted agent picks it up from the runtime's labels
// with its restart count, without creating anything twice.
func TestAgentRestartKeepsPodsAndRestartCounts(t *testing.T) {
	onEachRuntime(t, agentRestartKeepsPodsAndRestartCounts)
}

func agentRestartKeepsPodsAndRestartCounts(t *testing.T, n *node) {
	n.apply("survivor.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: survivor}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "if [ -f /data/once ]; then exec sleep 3600; fi; touch /data/once; exit 1"]
    volumeMounts: [{name: data, mountPath: /data}]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`)
	before := n.waitPod("survivor", "running and ready after one crash", func(p v1.Pod) bool {
		st := containerStatus(p, "app")
		return st.RestartCount == 1 && st.State.Running != nil && readyPod(p)
	})
	n.restartAgent()
	after := n.waitPod("survivor", "ready again under the new agent", readyPod)
	st, old := containerStatus(after, "app"), containerStatus(before, "app")
	if after.UID != before.UID || st.ContainerID != old.ContainerID || st.RestartCount != 1 {
		t.Errorf("after the restart: uid %s, container %s, restarts %d; want %s, %s, 1",
			after.UID, st.ContainerID, st.RestartCount, before.UID, old.ContainerID)
	}
	if last := st.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 {
		t.Errorf("lastState %+v; want the first run's exit 1", st.LastTerminationState)
	}
	ctx := context.Background()
	sandboxes, err := n.rt.cri().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	containers, err := n.rt.cri().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes.GetItems()) != 1 || len(containers.GetContainers()) != 2 {
		t.Errorf("the runtime holds %d sandboxes and %d containers; want 1 and 2 (the running one and the crashed one)",
			len(sandboxes.GetItems()), len(containers.GetContainers()))
	}
}
