package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// startCapacityAgent runs an agent on a fake clock whose node runs
// maxPods pods and has 2 CPUs and 1 GiB of memory to allocate.
func startCapacityAgent(t *testing.T, rt *criclienttest.Runtime, maxPods int) *testAgent {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, vols := newTestAgentWith(t, rt, t.TempDir(), clk, func(cfg *Config) { cfg.MaxPods = maxPods })
	a.deps.node.allocatable = podspec.Allocatable{MilliCPU: 2000, MemoryBytes: 1 << 30}
	return runTestAgent(t, a, vols)
}

func barePod(name, requests string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    resources: {requests: {%s}}
`, name, requests)
}

func replicaSetOf(replicas int) string {
	return strings.Replace(bestEffortReplicaSet, "replicas: 1", fmt.Sprintf("replicas: %d", replicas), 1)
}

// checkRejected checks a bare pod kubelet's admission refused.
func (a *testAgent) checkRejected(t *testing.T, name, reason, message string) {
	t.Helper()
	waitFor(t, name+" is rejected", func() bool { return a.pod(t, name).Status.Phase == v1.PodFailed })
	d, _ := a.DescribePod("default", name)
	if st := d.Pod.Status; st.Reason != reason || st.Message != "Pod was rejected: "+message {
		t.Errorf("%s: reason %q message %q; want %q %q", name, st.Reason, st.Message, reason, "Pod was rejected: "+message)
	}
	if !hasEventOf(d.Events, agentapi.EventWarning, reason, message) {
		t.Errorf("%s: no %s event: %+v", name, reason, d.Events)
	}
}

func TestAdmissionRefusesBarePodsBeyondTheNodesCapacity(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 3)
	a.apply(t, barePod("one", "cpu: 1500m, memory: 256Mi"))
	a.apply(t, barePod("cpu", "cpu: 600m"))
	a.checkRejected(t, "cpu", "OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000")
	a.apply(t, barePod("memory", "memory: 800Mi"))
	a.checkRejected(t, "memory", "OutOfmemory", "Node didn't have enough resource: memory, requested: 838860800, used: 268435456, capacity: 1073741824")
	a.apply(t, barePod("two", "cpu: 500m"))
	a.apply(t, barePod("three", "memory: 1Mi"))
	a.apply(t, barePod("four", "memory: 1Mi"))
	a.checkRejected(t, "four", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3")
	for _, name := range []string{"one", "two", "three"} {
		waitFor(t, name+" runs", func() bool { return a.pod(t, name).Status.Phase == v1.PodRunning })
	}
	for _, c := range rt.Calls() {
		for _, refused := range []string{"cpu", "memory", "four"} {
			if strings.Contains(c, "name:"+refused+" ") || strings.Contains(c, "/"+refused+"/") || strings.HasSuffix(c, " "+refused) {
				t.Errorf("the runtime saw the refused pod %s: %s", refused, c)
			}
		}
	}
	if alloc := a.Node().Node.Status.Allocatable; alloc.Pods().Value() != 3 {
		t.Errorf("node allocatable pods %v, want --max-pods 3", alloc.Pods())
	}
	// A finished or deleted pod frees its room.
	if _, err := a.Delete(context.Background(), "default", "three", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three is gone", func() bool { _, err := a.DescribePod("default", "three"); return err != nil })
	a.apply(t, barePod("five", "memory: 1Mi"))
	waitFor(t, "five runs in three's room", func() bool { return a.pod(t, "five").Status.Phase == v1.PodRunning })
}

const tooManyPods = "0/1 nodes are available: 1 Too many pods. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

// scheduledPods splits the pods kind owns into those bound to the node
// and those waiting unscheduled, failing on a pod that waits for another
// reason than message.
func (a *testAgent) scheduledPods(t *testing.T, kind, message string) (bound, waiting []v1.Pod) {
	t.Helper()
	for _, p := range a.ownedPods(kind) {
		c := podCondition(p, v1.PodScheduled)
		switch {
		case p.Spec.NodeName != "":
			bound = append(bound, p)
		case p.Status.Phase == v1.PodPending && c.Status == v1.ConditionFalse && c.Reason == "Unschedulable" && c.Message == message:
			waiting = append(waiting, p)
		default:
			t.Errorf("pod %s: phase %s, PodScheduled %+v; want bound, or Pending %q", p.Name, p.Status.Phase, c, message)
		}
	}
	return bound, waiting
}

func TestControllerPodsWaitForRoomAndRunWhenAPodTerminates(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 3)
	a.apply(t, replicaSetOf(4))
	waitFor(t, "3 pods run and one waits", func() bool {
		pods := a.ownedPods("ReplicaSet")
		return len(pods) == 4 && readyCount(pods) == 3
	})
	a.reconcileWorkloads()
	bound, waiting := a.scheduledPods(t, "ReplicaSet", tooManyPods)
	if len(bound) != 3 || len(waiting) != 1 {
		t.Fatalf("%d bound, %d waiting; want 3 and 1", len(bound), len(waiting))
	}
	d, _ := a.DescribePod("default", waiting[0].Name)
	if eventCount(d.Events, eventFailedScheduling) != 1 || !hasEventOf(d.Events, agentapi.EventWarning, eventFailedScheduling, tooManyPods) {
		t.Errorf("waiting pod events %+v, want one FailedScheduling %q", d.Events, tooManyPods)
	}
	if _, err := a.Delete(context.Background(), "default", bound[0].Name, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiting pod runs in the deleted pod's room", func() bool {
		p, err := a.DescribePod("default", waiting[0].Name)
		return err == nil && p.Pod.Status.Phase == v1.PodRunning
	})
	waitFor(t, "the replacement waits", func() bool {
		b, w := a.scheduledPods(t, "ReplicaSet", tooManyPods)
		return len(b) == 3 && len(w) == 1 && w[0].Name != waiting[0].Name
	})
	d, _ = a.DescribePod("default", waiting[0].Name)
	if !hasEventOf(d.Events, agentapi.EventNormal, "Scheduled", "Successfully assigned default/"+waiting[0].Name+" to node-1") {
		t.Errorf("no Scheduled event: %+v", d.Events)
	}
	// Scaling down removes the waiting pod first (not ready).
	a.apply(t, replicaSetOf(3))
	waitFor(t, "3 pods, all bound", func() bool {
		b, w := a.scheduledPods(t, "ReplicaSet", tooManyPods)
		return len(b) == 3 && len(w) == 0
	})
}

func TestControllerPodsWaitForCPUAndMemory(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 110)
	a.apply(t, strings.Replace(replicaSetOf(3), "command: [sleep, \"1000\"]}", "command: [sleep, \"1000\"], resources: {requests: {cpu: 800m, memory: 400Mi}}}", 1))
	const both = "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	waitFor(t, "2 pods run and one waits", func() bool {
		pods := a.ownedPods("ReplicaSet")
		return len(pods) == 3 && readyCount(pods) == 2
	})
	bound, waiting := a.scheduledPods(t, "ReplicaSet", both)
	if len(bound) != 2 || len(waiting) != 1 {
		t.Fatalf("%d bound, %d waiting; want 2 and 1", len(bound), len(waiting))
	}
}

// A Deployment of 500 replicas on a node of 110 pods: its ReplicaSet
// makes the 500 pods in slow-start batches, releasing the agent's lock
// between them (another goroutine takes it and sees a batch boundary,
// never a half-made batch), and at most 110 are admitted; the others
// wait Pending with the scheduler's reason.
func TestFiveHundredReplicasOnAHundredAndTenPods(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 110)
	boundaries := map[int]bool{0: true}
	for sum, size := 0, 1; sum < 500; size *= 2 {
		sum = min(sum+size, 500)
		boundaries[sum] = true
	}
	seen := map[int]bool{}
	a.apply(t, strings.Replace(webDeployment, "replicas: 3", "replicas: 500", 1))
	for deadline := time.Now().Add(time.Minute); !seen[500]; {
		a.mu.Lock()
		n := len(a.workers)
		a.mu.Unlock()
		seen[n] = true
		if time.Now().After(deadline) {
			t.Fatalf("500 pods not made in a minute: %d", n)
		}
	}
	between := 0
	for n := range seen {
		if !boundaries[n] {
			t.Errorf("the lock was taken with %d pods made: not a batch boundary", n)
		}
		if n > 0 && n < 500 {
			between++
		}
	}
	if between == 0 {
		t.Errorf("the lock was never taken while the pods were made: saw %v", seen)
	}
	waitFor(t, "110 pods run", func() bool { return readyCount(a.ownedPods("ReplicaSet")) == 110 })
	a.reconcileWorkloads()
	bound, waiting := a.scheduledPods(t, "ReplicaSet", tooManyPods)
	if len(bound) != 110 || len(waiting) != 390 {
		t.Errorf("%d bound, %d waiting; want 110 and 390", len(bound), len(waiting))
	}
	if sandboxes, _ := rt.Counts(); sandboxes > 110 {
		t.Errorf("the runtime holds %d sandboxes, want at most 110", sandboxes)
	}
}

// A batch made after its pass finds its owner as planned, or makes
// nothing: not once the owner was replaced (applied again), rescaled in
// place (another generation, as a Deployment rescales its ReplicaSet) or
// marked deleted.
func TestPodBatchesStopWhenTheirOwnerChanged(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 110)
	a.apply(t, replicaSetOf(0))
	current := func() *workloadObj {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.workloads[a.workloadNames[nameKey("ReplicaSet", "default", "web")]]
	}
	made := 0
	plan := func() podCreation {
		o := current()
		a.mu.Lock()
		defer a.mu.Unlock()
		c := plannedCreation(o)
		for range 5 {
			c.pods = append(c.pods, func() { made++ })
		}
		return c
	}
	try := func(what string, c podCreation, want int) {
		t.Helper()
		made = 0
		if a.createPods(c); made != want {
			t.Errorf("%s: %d of 5 made, want %d", what, made, want)
		}
	}
	try("owner as planned", plan(), 5)
	stale := plan()
	a.apply(t, replicaSetOf(0)+"  minReadySeconds: 1\n")
	try("owner replaced since the plan", stale, 0)
	stale = plan()
	o := current()
	a.mu.Lock()
	o.rs.Generation++
	a.mu.Unlock()
	try("owner rescaled in place since the plan", stale, 0)
	stale = plan()
	if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceReplicaSet, "default", "web", nil); err != nil {
		t.Fatal(err)
	}
	try("owner deleted since the plan", stale, 0)
}

// heldSandboxes is a runtime whose RunPodSandbox waits for release,
// counting the calls in flight.
type heldSandboxes struct {
	criclient.Runtime
	release chan struct{}

	mu             sync.Mutex
	inFlight, most int
}

func (h *heldSandboxes) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	h.mu.Lock()
	h.inFlight++
	h.most = max(h.most, h.inFlight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
	case <-ctx.Done(): // the agent stops
		return "", ctx.Err()
	}
	return h.Runtime.RunPodSandbox(ctx, cfg, handler)
}

func (h *heldSandboxes) counts() (inFlight, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inFlight, h.most
}

// Pods admitted together make their sandboxes a few at a time: the
// others wait their turn and run once a slot frees.
func TestSandboxesAreMadeAFewAtATime(t *testing.T) {
	rt := criclienttest.New()
	held := &heldSandboxes{Runtime: rt, release: make(chan struct{})}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, vols := newTestAgentWith(t, rt, t.TempDir(), clk, func(*Config) {})
	a.deps.runtime = held
	a.deps.sandboxSlots = make(chan struct{}, 3)
	ta := runTestAgent(t, a, vols)
	ta.apply(t, replicaSetOf(10))
	waitFor(t, "3 sandboxes being made", func() bool { n, _ := held.counts(); return n == 3 })
	for range 10 { // one at a time: each waits for a sandbox to take it
		held.release <- struct{}{}
	}
	waitFor(t, "10 pods run", func() bool { return readyCount(ta.ownedPods("ReplicaSet")) == 10 })
	if _, most := held.counts(); most != 3 {
		t.Errorf("%d sandboxes were made at once, want at most 3", most)
	}
}

// A pod whose manifest changed on a full node is replaced, not rejected:
// the new pod takes the old one's room, one for one (the old one still
// counted while it terminated, and the new one was refused OutOfpods for
// good: every later apply found it unchanged).
func TestChangedPodOnAFullNodeTakesItsOwnRoom(t *testing.T) {
	rt := criclienttest.New()
	a := startCapacityAgent(t, rt, 2)
	a.apply(t, barePod("one", "memory: 1Mi"))
	a.apply(t, barePod("two", "memory: 1Mi"))
	for _, name := range []string{"one", "two"} {
		waitFor(t, name+" runs", func() bool { return a.pod(t, name).Status.Phase == v1.PodRunning })
	}
	old := a.pod(t, "two").UID
	a.apply(t, barePod("two", "memory: 2Mi"))
	waitFor(t, "the new two runs", func() bool {
		p := a.pod(t, "two")
		if p.Status.Phase == v1.PodFailed {
			t.Fatalf("the new two was refused: %s %s", p.Status.Reason, p.Status.Message)
		}
		return p.UID != old && p.Status.Phase == v1.PodRunning
	})
}
