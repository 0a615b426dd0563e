package integration

import (
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestConcurrentCreatesInOnePod: creates in one pod run side by side (they
// share the sandbox's lock); each gets its container, and two creates of
// the same name leave exactly one winner and an AlreadyExists.
func TestConcurrentCreatesInOnePod(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "parallel")
	podID := d.runPod(podCfg)
	names := []string{"a", "b", "c", "d", "e", "f", "twin", "twin"}
	ids := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{
				PodSandboxId: podID, Config: sleeper(name), SandboxConfig: podCfg})
			ids[i], errs[i] = resp.GetContainerId(), err
		}()
	}
	wg.Wait()
	created, conflicts := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
			d.KnownIDs[ids[i]] = true
			d.startContainer(ids[i])
		case status.Code(err) == codes.AlreadyExists && names[i] == "twin":
			conflicts++
		default:
			t.Errorf("create %s: %v", names[i], err)
		}
	}
	if created != 7 || conflicts != 1 {
		t.Fatalf("%d created, %d AlreadyExists; want 7 and 1 (%v)", created, conflicts, errs)
	}
	list, err := d.RT.ListContainers(d.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		PodSandboxId: podID, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil || len(list.GetContainers()) != 7 {
		t.Errorf("running containers in the pod: %d (%v), want 7", len(list.GetContainers()), err)
	}
	if n := len(d.RuncContainers()); n != 8 {
		t.Errorf("%d runc containers, want 8: the seven and the pod's berth-pause", n)
	}
	d.stopAndRemovePod(podID)
}
