package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/eviction"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

const mib = 1 << 20

// fakeSignals is an observer whose observations the test sets.
type fakeSignals struct {
	mu  sync.Mutex
	obs eviction.Observations
}

func (f *fakeSignals) Observe(context.Context) (eviction.Observations, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.obs, nil
}

func (f *fakeSignals) get() eviction.Observations {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.obs
}

func (f *fakeSignals) set(obs eviction.Observations) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = obs
}

func plenty() eviction.Observations {
	return eviction.Observations{
		eviction.SignalMemoryAvailable: {Available: 4096 * mib, Capacity: 8192 * mib},
		eviction.SignalNodeFsAvailable: {Available: 900, Capacity: 1000},
	}
}

func lowMemory() eviction.Observations {
	o := plenty()
	o[eviction.SignalMemoryAvailable] = eviction.Observation{Available: 50 * mib, Capacity: 8192 * mib}
	return o
}

func lowDisk() eviction.Observations {
	o := plenty()
	o[eviction.SignalNodeFsAvailable] = eviction.Observation{Available: 10, Capacity: 1000}
	return o
}

// fakeStats reports each container's memory working set, by container
// name.
type fakeStats struct {
	rt     *criclienttest.Runtime
	memory map[string]uint64
}

func (f *fakeStats) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return nil, nil
}

func (f *fakeStats) ListContainerStats(ctx context.Context, labels map[string]string) ([]*runtimeapi.ContainerStats, error) {
	cs, err := f.rt.ListContainers(ctx, labels)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.ContainerStats
	for _, c := range cs {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		out = append(out, &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Id: c.Id, Labels: c.Labels},
			Memory:     &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: f.memory[c.Labels[podspec.LabelPodName]]}},
		})
	}
	return out, nil
}

// countingReclaimer counts node-level reclaims and may relieve the
// pressure of signals.
type countingReclaimer struct {
	mu      sync.Mutex
	calls   int
	signals *fakeSignals
	relieve bool
}

func (r *countingReclaimer) DeleteUnusedImages(context.Context) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.relieve {
		r.signals.set(plenty())
	}
	return 100, nil
}

func (r *countingReclaimer) DeleteAllUnusedContainers(context.Context) error { return nil }

func (r *countingReclaimer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func startPressureAgent(t *testing.T, rt *criclienttest.Runtime, signals *fakeSignals, reclaim *countingReclaimer, memory map[string]uint64) *testAgent {
	t.Helper()
	dir := t.TempDir()
	want := signals.get()
	signals.set(plenty()) // for the loop's own first pass, see below
	a, vols := newTestAgentWith(t, rt, dir, clock.RealClock{}, func(cfg *Config) {
		cfg.Eviction = eviction.Config{Thresholds: eviction.Defaults()}
		cfg.Observer = signals
		cfg.Stats = &fakeStats{rt: rt, memory: memory}
		cfg.Reclaimer = reclaim
		cfg.HousekeepingPeriod = time.Hour // the test runs the passes
	})
	ta := runTestAgent(t, a, vols)
	// The housekeeping loop passes once at its start, then each hour: the
	// test's pressure must not meet that first pass, which would come
	// when it comes (under load, after the test's pods run, evicting one).
	select {
	case <-ta.pressure.measured:
	case <-time.After(time.Minute):
		t.Fatal("the housekeeping loop did not pass once in a minute")
	}
	signals.set(want)
	return ta
}

const bestEffortPod = `
apiVersion: v1
kind: Pod
metadata: {name: besteffort}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

const burstablePod = `
apiVersion: v1
kind: Pod
metadata: {name: burstable}
spec:
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    resources: {requests: {memory: 64Mi}}
`

func hasEventOf(events []agentapi.Event, typ, reason, message string) bool {
	for _, e := range events {
		if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, message) {
			return true
		}
	}
	return false
}

func TestPressureRejectsNewPodsWithKubeletsStatus(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startPressureAgent(t, rt, signals, &countingReclaimer{}, nil)
	a.housekeep(context.Background())
	a.apply(t, bestEffortPod)
	a.apply(t, burstablePod)
	waitFor(t, "besteffort is rejected", func() bool { return a.pod(t, "besteffort").Status.Phase == v1.PodFailed })
	st := a.pod(t, "besteffort").Status
	if st.Reason != "Evicted" || st.Message != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Errorf("rejected status: reason %q message %q", st.Reason, st.Message)
	}
	d, _ := a.DescribePod("default", "besteffort")
	if !hasEventOf(d.Events, agentapi.EventWarning, "Evicted", "The node had condition: [MemoryPressure]. ") {
		t.Errorf("no Evicted event: %+v", d.Events)
	}
	waitFor(t, "burstable runs under MemoryPressure", func() bool { return a.pod(t, "burstable").Status.Phase == v1.PodRunning })
	for _, c := range rt.Calls() {
		if strings.Contains(c, "besteffort") {
			t.Errorf("the runtime saw the rejected pod: %s", c)
		}
	}
	// DiskPressure refuses every pod.
	signals.set(lowDisk())
	a.housekeep(context.Background())
	a.apply(t, strings.ReplaceAll(burstablePod, "name: burstable", "name: burstable-2"))
	waitFor(t, "burstable-2 is rejected", func() bool { return a.pod(t, "burstable-2").Status.Phase == v1.PodFailed })
	if msg := a.pod(t, "burstable-2").Status.Message; msg != "Pod was rejected: The node had condition: [MemoryPressure DiskPressure]. " {
		t.Errorf("message %q", msg)
	}
}

func TestEvictionTakesBestEffortBeforeBurstableAndKeepsItFailed(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: plenty()}
	a := startPressureAgent(t, rt, signals, &countingReclaimer{}, map[string]uint64{"besteffort": 10 * mib, "burstable": 20 * mib})
	a.apply(t, bestEffortPod)
	a.apply(t, burstablePod)
	waitFor(t, "both run", func() bool {
		return a.pod(t, "besteffort").Status.Phase == v1.PodRunning && a.pod(t, "burstable").Status.Phase == v1.PodRunning
	})
	signals.set(lowMemory())
	a.housekeep(context.Background())
	waitFor(t, "besteffort is evicted", func() bool {
		_, done := a.worker(string(a.pod(t, "besteffort").UID)).failedState()
		return done
	})
	st := a.pod(t, "besteffort").Status
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 10Mi, request is 0, has larger consumption of memory. "
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != want {
		t.Errorf("evicted status: %s %q %q, want Failed Evicted %q", st.Phase, st.Reason, st.Message, want)
	}
	if p := a.pod(t, "burstable").Status.Phase; p != v1.PodRunning {
		t.Errorf("burstable %s after one round, want Running (one pod per round)", p)
	}
	d, _ := a.DescribePod("default", "besteffort")
	if !hasEventOf(d.Events, agentapi.EventWarning, "Evicted", "The node was low on resource: memory.") {
		t.Errorf("no Evicted event: %+v", d.Events)
	}
	if sandboxes, _ := rt.Counts(); sandboxes != 1 {
		t.Errorf("runtime holds %d sandboxes, want the burstable pod's only", sandboxes)
	}
	// Still under pressure: the next round takes the burstable pod.
	a.housekeep(context.Background())
	waitFor(t, "burstable is evicted", func() bool { return a.pod(t, "burstable").Status.Phase == v1.PodFailed })
	// Pressure over: the evicted pods stay Failed; applying them again
	// unchanged does not restart them.
	signals.set(plenty())
	a.housekeep(context.Background())
	if out := a.apply(t, bestEffortPod).Pods()[0].Outcome; out != agentapi.OutcomeUnchanged {
		t.Errorf("evicted pod applied again: %s, want unchanged", out)
	}
	if p := a.pod(t, "besteffort").Status.Phase; p != v1.PodFailed {
		t.Errorf("evicted pod applied again: %s, want Failed", p)
	}
	if _, err := a.Delete(context.Background(), "default", "besteffort", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the evicted pod is deleted", func() bool { _, err := a.DescribePod("default", "besteffort"); return err != nil })
}

func TestDiskPressureReclaimsNodeResourcesBeforeEvicting(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: plenty()}
	reclaim := &countingReclaimer{signals: signals, relieve: true}
	a := startPressureAgent(t, rt, signals, reclaim, nil)
	a.apply(t, bestEffortPod)
	waitFor(t, "besteffort runs", func() bool { return a.pod(t, "besteffort").Status.Phase == v1.PodRunning })
	signals.set(lowDisk())
	a.housekeep(context.Background())
	if reclaim.count() != 1 {
		t.Fatalf("reclaims: %d, want 1", reclaim.count())
	}
	if failed, _ := a.worker(string(a.pod(t, "besteffort").UID)).failedState(); failed {
		t.Fatal("a pod was evicted although reclaiming relieved the pressure")
	}
	reclaim.mu.Lock()
	reclaim.relieve = false
	reclaim.mu.Unlock()
	signals.set(lowDisk())
	a.housekeep(context.Background())
	waitFor(t, "besteffort is evicted for disk", func() bool { return a.pod(t, "besteffort").Status.Phase == v1.PodFailed })
	if msg := a.pod(t, "besteffort").Status.Message; !strings.HasPrefix(msg, "The node was low on resource: ephemeral-storage. Threshold quantity: 100, available: 10. ") {
		t.Errorf("message %q", msg)
	}
}

func TestNodeReportsConditionsCapacityAndEvents(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: plenty()}
	a := startPressureAgent(t, rt, signals, &countingReclaimer{}, nil)
	a.housekeep(context.Background())
	n := a.Node()
	if n.Node.Name != "node-1" || n.Node.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("node %s capacity %v", n.Node.Name, n.Node.Status.Capacity)
	}
	cond := func(d agentapi.NodeDetail, typ v1.NodeConditionType) v1.NodeCondition {
		for _, c := range d.Node.Status.Conditions {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no %s condition in %+v", typ, d.Node.Status.Conditions)
		return v1.NodeCondition{}
	}
	if c := cond(n, v1.NodeReady); c.Status != v1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("Ready: %+v", c)
	}
	signals.set(lowMemory())
	a.housekeep(context.Background())
	n = a.Node()
	if c := cond(n, v1.NodeMemoryPressure); c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" {
		t.Errorf("MemoryPressure: %+v", c)
	}
	if !hasEventOf(n.Events, agentapi.EventNormal, "NodeHasInsufficientMemory", "Node node-1 status is now: NodeHasInsufficientMemory") {
		t.Errorf("no NodeHasInsufficientMemory event: %+v", n.Events)
	}
	mem := n.Node.Status.Capacity.Memory().Value() - n.Node.Status.Allocatable.Memory().Value()
	if mem != 100*mib {
		t.Errorf("capacity - allocatable memory = %d, want the 100Mi hard threshold", mem)
	}
}
