package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"time"

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

// teardown runs whether the test passed or not: the agent deletes its
// pods, containerd removes whatever is left, both stop; then nothing of
// theirs may be left on the machine, and whatever is gets removed.
func (c *ctrdNode) teardown() {
	t := c.t
	for _, p := range []*harness.Process{&c.ctrd.Process, &c.agent} {
		if p.Exited() {
			t.Errorf("%s exited during the test: %v", p.Name, p.ExitStatus())
		}
	}
	if c.ctrd.Running() && c.ctrd.RT != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if sandboxes, containers, err := c.ctrd.ListAll(ctx); err == nil {
			c.seen.runtime(sandboxes, containers) // before the agent deletes them
		}
		cancel()
	}
	if c.agent.Running() && c.ctrd.Running() {
		c.drain()
	}
	c.stopAgent()
	c.removeSandboxesThroughCRI()
	if err := c.ctrd.Shutdown(); err != nil {
		t.Errorf("teardown: %v", err)
	}
	c.seen.fromLog(c.ctrd.LogPath)
	c.seen.fromLog(c.agent.LogPath)
	for _, problem := range c.leftovers() {
		t.Errorf("leftover after teardown: %s", problem)
	}
	if b, err := os.ReadFile(c.agent.LogPath); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
		t.Errorf("the agent reported a data race (BERTH_TEST_RACE=1 builds it with -race); see %s", c.agent.LogPath)
	}
	if t.Failed() {
		// Short: CI shows the end of a failed run's output, where the
		// failure's own message must still be; the whole logs are kept
		// (harness.KeepOnFailure).
		t.Logf("%s\n%s", c.agent.LogTail(15), c.ctrd.LogTail(15))
	}
	c.forceClean()
}

// removeSandboxesThroughCRI removes what containerd still holds: nothing,
// when the agent did its job.
func (c *ctrdNode) removeSandboxesThroughCRI() {
	if !c.ctrd.Running() || c.ctrd.RT == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sandboxes, containers, err := c.ctrd.ListAll(ctx)
	if err != nil {
		c.t.Errorf("teardown: %v", err)
		return
	}
	c.seen.runtime(sandboxes, containers)
	for _, ctr := range containers {
		c.t.Errorf("teardown: containerd still holds container %s (%s) after the agent deleted every pod", ctr.GetId(), ctr.GetMetadata().GetName())
		c.ctrd.RT.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr.GetId()}) //nolint:errcheck // best effort; leftovers are checked next
	}
	for _, sb := range sandboxes {
		c.t.Errorf("teardown: containerd still holds sandbox %s (pod %s) after the agent deleted every pod", sb.GetId(), sb.GetMetadata().GetName())
		c.ctrd.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()})     //nolint:errcheck // as above
		c.ctrd.RT.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}) //nolint:errcheck // as above
	}
}

// forceClean removes whatever is left: processes, mounts, the bridge,
// iptables rules, cgroups, CNI results, shim sockets and directories.
func (c *ctrdNode) forceClean() {
	for range 3 {
		procs := c.processesLeft()
		if len(procs) == 0 {
			break
		}
		for _, p := range procs {
			syscall.Kill(p.PID, syscall.SIGKILL) //nolint:errcheck // a process of this test's containerd
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, m := range c.mountsLeft() {
		syscall.Unmount(m, syscall.MNT_DETACH) //nolint:errcheck // best effort; checked below
	}
	c.network.RemoveLinks()
	if err := c.network.RemoveIptablesRules(); err != nil {
		c.t.Errorf("force clean: %v", err)
	}
	for _, c := range c.cgroupsLeft() {
		harness.RemoveCgroupTree(c)
	}
	for _, f := range append(c.cniResultsLeft(), c.shimSocketsLeft()...) {
		_ = os.Remove(f) // best effort
	}
	if mounts := c.mountsLeft(); len(mounts) > 0 {
		c.t.Errorf("force clean: still mounted, %s and %s are kept: %v", c.root, c.state, mounts)
		return
	}
	for _, dir := range []string{c.state, c.root} {
		if err := os.RemoveAll(dir); err != nil {
			c.t.Errorf("force clean: %v", err)
		}
	}
	harness.RemoveEmptyDirs(c.absentHostDirs) // only when empty: something else may use them now
}
