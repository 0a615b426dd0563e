package containerd

import (
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// checkAgentRestart stops the agent (the pod keeps running in
// containerd), starts a new one, and checks that it adopts the pod as it
// is: same uid, sandbox and containers, no restart, nothing created twice.
func checkAgentRestart(t *testing.T, e *env) {
	before := e.waitPod(t, "app", "ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	uid := string(before.UID)
	sandboxesBefore, containersBefore := e.criObjectsOfPod(t, uid)
	mainBefore, _ := containerStatus(before, "main")

	e.stopAgent(t)
	if st := e.criContainer(t, rawID(mainBefore.ContainerID)); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("with the agent stopped, main is %v in containerd; want it still running", st.GetState())
	}
	e.startAgent(t)

	after := e.waitPod(t, "app", "ready under the new agent", func(p v1.Pod) bool {
		return condition(p, v1.PodReady) == v1.ConditionTrue
	})
	mainAfter, _ := containerStatus(after, "main")
	if after.UID != before.UID || mainAfter.ContainerID != mainBefore.ContainerID || mainAfter.RestartCount != 0 {
		t.Errorf("after the restart: uid %s, main %s, restarts %d; want %s, %s, 0",
			after.UID, mainAfter.ContainerID, mainAfter.RestartCount, before.UID, mainBefore.ContainerID)
	}
	initBefore, _ := containerStatus(before, "prepare")
	if initAfter, _ := containerStatus(after, "prepare"); initAfter.ContainerID != initBefore.ContainerID || initAfter.State.Terminated == nil {
		t.Errorf("init container after the restart: %+v; want the same completed instance %s", initAfter, initBefore.ContainerID)
	}
	// A few relists later the agent still has created nothing.
	time.Sleep(3 * time.Second)
	sandboxesAfter, containersAfter := e.criObjectsOfPod(t, uid)
	if got, want := sandboxIDs(sandboxesAfter), sandboxIDs(sandboxesBefore); !slices.Equal(got, want) || len(got) != 1 {
		t.Errorf("sandboxes of the pod after the restart %v; want the one from before, %v", got, want)
	}
	if got, want := containerIDs(containersAfter), containerIDs(containersBefore); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("containers of the pod after the restart %v; want the two from before, %v", got, want)
	}
	if got := e.mustBerth(t, "logs", "app"); got != appLog {
		t.Errorf("berth logs app after the restart = %q; want %q", got, appLog)
	}
}

func sandboxIDs(items []*runtimeapi.PodSandbox) []string {
	var ids []string
	for _, sb := range items {
		ids = append(ids, sb.GetId())
	}
	sort.Strings(ids)
	return ids
}

func containerIDs(items []*runtimeapi.Container) []string {
	var ids []string
	for _, c := range items {
		ids = append(ids, c.GetId())
	}
	sort.Strings(ids)
	return ids
}
