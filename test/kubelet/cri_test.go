package kubelet

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/kube"
)

// cri looks at berth through the harness's CRI client.
type cri struct {
	k *kube.Kubelet
	d *harness.Daemon
}

type ctrState int

const (
	absent ctrState = iota
	created
	running
	exited0
	exitedNonZero
)

// containers lists the containers named name in the pod named pod (every
// attempt, newest last is not guaranteed).
func (c cri) containers(pod, name string) []*runtimeapi.Container {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": name},
	}})
	if err != nil {
		c.k.T.Fatalf("ListContainers: %v", err)
	}
	return resp.GetContainers()
}

// state is the state of the newest attempt of a container.
func (c cri) state(pod, name string) ctrState {
	var newest *runtimeapi.Container
	for _, ctr := range c.containers(pod, name) {
		if newest == nil || ctr.GetMetadata().GetAttempt() > newest.GetMetadata().GetAttempt() {
			newest = ctr
		}
	}
	if newest == nil {
		return absent
	}
	switch newest.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return c.exitState(newest.GetId())
	}
	return created
}

func (c cri) exitState(id string) ctrState {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.d.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return absent // removed meanwhile
	}
	if st.GetStatus().GetExitCode() == 0 {
		return exited0
	}
	return exitedNonZero
}

func (c cri) attempts(pod, name string) int { return len(c.containers(pod, name)) }

// maxAttempt is the highest attempt (kubelet's restart count) of a
// container; kubelet may have removed older ones.
func (c cri) maxAttempt(pod, name string) uint32 {
	var n uint32
	for _, ctr := range c.containers(pod, name) {
		n = max(n, ctr.GetMetadata().GetAttempt())
	}
	return n
}

// podUIDs lists the uids of the sandboxes berth holds.
func (c cri) podUIDs() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	var uids []string
	for _, sb := range resp.GetItems() {
		uids = append(uids, sb.GetMetadata().GetUid())
		c.d.KnownPodUIDs[sb.GetMetadata().GetUid()] = true
	}
	return uids
}

// empty reports whether berth lists no sandbox and no container.
func (c cri) empty() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	ctrs, err := c.d.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		c.k.T.Fatalf("ListContainers: %v", err)
	}
	return len(sbs.GetItems()) == 0 && len(ctrs.GetContainers()) == 0
}

// sandboxID is the id of the ready sandbox of the pod named pod, or a
// note saying how many there are.
func (c cri) sandboxID(pod string) string {
	sbs := c.readySandboxes(pod)
	if len(sbs) != 1 {
		return fmt.Sprintf("(%d ready sandboxes)", len(sbs))
	}
	return sbs[0].GetId()
}

// readySandboxes lists the ready sandboxes of the pod named pod.
func (c cri) readySandboxes(pod string) []*runtimeapi.PodSandbox {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod},
	}})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	return resp.GetItems()
}

// runningID is the id of the running attempt of a container, or "".
func (c cri) runningID(pod, name string) string {
	for _, ctr := range c.containers(pod, name) {
		if ctr.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return ctr.GetId()
		}
	}
	return ""
}
