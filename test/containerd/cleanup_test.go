package containerd

import (
	"context"
	"os"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// seenObjects are the sandboxes, containers and pods the test has seen,
// so that the leftover checks can find what belongs to them.
type seenObjects struct {
	ids     map[string]bool // sandbox and container ids
	podUIDs map[string]bool
}

func newSeenObjects() seenObjects {
	return seenObjects{ids: map[string]bool{}, podUIDs: map[string]bool{}}
}

// pod remembers a pod's uid and the container ids of its statuses.
func (s seenObjects) pod(p *v1.Pod) {
	s.podUIDs[string(p.UID)] = true
	for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		for _, id := range []string{st.ContainerID, terminatedID(st.LastTerminationState)} {
			if id != "" {
				s.ids[rawID(id)] = true
			}
		}
	}
}

func terminatedID(s v1.ContainerState) string {
	if s.Terminated == nil {
		return ""
	}
	return s.Terminated.ContainerID
}

// runtime remembers every sandbox and container containerd lists.
func (s seenObjects) runtime(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	for _, sb := range sandboxes {
		s.ids[sb.GetId()] = true
		s.podUIDs[sb.GetMetadata().GetUid()] = true
	}
	for _, c := range containers {
		s.ids[c.GetId()] = true
	}
}

// fromLog remembers every 64-hex id a log mentions (half-made objects
// included); ids that are not containers only widen the search.
func (s seenObjects) fromLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for _, id := range harness.IDPattern.FindAllString(string(b), -1) {
		s.ids[id] = true
	}
}

// cleanup runs whether the test passed or not: the agent deletes its
// pods, containerd removes whatever is left, both stop; then nothing of
// theirs may be left on the machine, and whatever is gets removed.
func (e *env) cleanup() {
	t := e.t
	for _, d := range []*daemon{&e.ctrd.daemon, e.agent} {
		if d.crashed() {
			t.Errorf("%s exited during the test: %v", d.name, d.cmd.ProcessState)
		}
	}
	e.deletePodsThroughAgent()
	if err := e.agent.stop(20 * time.Second); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	e.removeSandboxesThroughCRI()
	if err := e.ctrd.shutdown(); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	e.seen.fromLog(e.ctrd.logPath)
	e.seen.fromLog(e.agent.logPath)
	for _, problem := range e.leftovers() {
		t.Errorf("leftover after cleanup: %s", problem)
	}
	if b, err := os.ReadFile(e.agent.logPath); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
		t.Errorf("the agent reported a data race (BERTH_TEST_RACE=1 builds it with -race); see %s", e.agent.logPath)
	}
	if t.Failed() {
		t.Logf("%s\n%s", e.agent.logTail(80), e.ctrd.logTail(80))
	}
	e.forceClean()
}

// deletePodsThroughAgent deletes every pod the agent still runs (a test
// that failed half-way) and waits up to a minute until they are gone.
// Without containerd the agent cannot delete anything: the forced cleanup
// removes the pods then.
func (e *env) deletePodsThroughAgent() {
	if !e.agent.running() || !e.ctrd.running() {
		return
	}
	pods, err := e.listPods()
	if err != nil {
		e.t.Errorf("cleanup: %v", err)
		return
	}
	for _, p := range pods {
		if _, errOut, err := e.berth("delete", "pod", "-n", p.Namespace, p.Name, "--grace-period=0", "--wait=false"); err != nil {
			e.t.Errorf("cleanup: berth delete pod %s: %v: %s", p.Name, err, errOut)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for len(pods) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if pods, err = e.listPods(); err != nil {
			e.t.Errorf("cleanup: %v", err)
			return
		}
	}
	if len(pods) > 0 {
		e.t.Errorf("cleanup: the agent still lists %d pods a minute after deleting them", len(pods))
	}
}

// removeSandboxesThroughCRI removes what containerd still holds: nothing,
// when the agent did its job.
func (e *env) removeSandboxesThroughCRI() {
	if !e.ctrd.running() || e.ctrd.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sandboxes, containers, err := e.ctrd.listAll(ctx)
	if err != nil {
		e.t.Errorf("cleanup: %v", err)
		return
	}
	e.seen.runtime(sandboxes, containers)
	for _, c := range containers {
		e.t.Errorf("cleanup: containerd still holds container %s (%s) after the agent deleted every pod", c.GetId(), c.GetMetadata().GetName())
		_, _ = e.ctrd.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.GetId()}) // best effort; leftovers are checked next
	}
	for _, sb := range sandboxes {
		e.t.Errorf("cleanup: containerd still holds sandbox %s (pod %s) after the agent deleted every pod", sb.GetId(), sb.GetMetadata().GetName())
		_, _ = e.ctrd.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}) // as above: leftovers are checked next
		_, _ = e.ctrd.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()})
	}
}

// listAll lists every sandbox and container of the CRI plugin.
func (c *containerd) listAll(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	sbs, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, nil, err
	}
	ctrs, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, nil, err
	}
	return sbs.GetItems(), ctrs.GetContainers(), nil
}

// forceClean removes whatever is left: processes, mounts, the bridge,
// iptables rules, cgroups, CNI results, shim sockets and directories.
func (e *env) forceClean() {
	for range 3 {
		procs := e.processesLeft()
		if len(procs) == 0 {
			break
		}
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGKILL) // a process of this test's containerd
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, m := range e.mountsLeft() {
		_ = syscall.Unmount(m, syscall.MNT_DETACH) // best effort; checked below
	}
	e.net.RemoveLinks()
	if err := e.net.RemoveIptablesRules(); err != nil {
		e.t.Errorf("force clean: %v", err)
	}
	for _, c := range e.cgroupsLeft() {
		harness.RemoveCgroupTree(c)
	}
	for _, f := range append(e.cniResultsLeft(), e.shimSocketsLeft()...) {
		os.Remove(f) // best effort
	}
	if mounts := e.mountsLeft(); len(mounts) > 0 {
		e.t.Errorf("force clean: still mounted, %s and %s are kept: %v", e.root, e.state, mounts)
		return
	}
	for _, dir := range []string{e.state, e.root} {
		if err := os.RemoveAll(dir); err != nil {
			e.t.Errorf("force clean: %v", err)
		}
	}
	for _, dir := range e.absentHostDirs {
		os.Remove(dir) // only when empty: something else may use it now
	}
}
