package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/eviction"
)

const bestEffortReplicaSet = `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

const bestEffortStatefulSet = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

const wantUnschedulable = "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

// startSchedulingAgent is startPressureAgent in dir whose conditions
// clear as soon as the thresholds are no longer met.
func startSchedulingAgent(t *testing.T, rt *criclienttest.Runtime, dir string, signals SignalObserver) *testAgent {
	t.Helper()
	a, vols := newTestAgentWith(t, rt, dir, clock.RealClock{}, func(cfg *Config) {
		cfg.Eviction = eviction.Config{Thresholds: eviction.Defaults(), PressureTransitionPeriod: time.Nanosecond}
		cfg.Observer = signals
		cfg.Stats = &fakeStats{rt: rt}
		cfg.Reclaimer = &countingReclaimer{}
		cfg.HousekeepingPeriod = time.Hour // the test runs the passes
	})
	return runTestAgent(t, a, vols)
}

// onlyPod returns the one pod kind owns, failing otherwise.
func (a *testAgent) onlyPod(t *testing.T, kind string) v1.Pod {
	t.Helper()
	pods := a.ownedPods(kind)
	if len(pods) != 1 {
		t.Fatalf("%s owns %d pods (%v), want 1", kind, len(pods), keys(pods))
	}
	for _, p := range pods {
		return p
	}
	return v1.Pod{}
}

func eventCount(events []agentapi.Event, reason string) int {
	n := 0
	for _, e := range events {
		if e.Reason == reason {
			n += e.Count
		}
	}
	return n
}

// checkUnschedulable checks a pod waiting for the scheduler: Pending,
// PodScheduled False Unschedulable, no node, one FailedScheduling event.
func (a *testAgent) checkUnschedulable(t *testing.T, p v1.Pod) {
	t.Helper()
	c := podCondition(p, v1.PodScheduled)
	if p.Status.Phase != v1.PodPending || c.Status != v1.ConditionFalse || c.Reason != "Unschedulable" || c.Message != wantUnschedulable || p.Spec.NodeName != "" {
		t.Errorf("pod %s: phase %s nodeName %q PodScheduled %+v; want Pending, unscheduled, %q", p.Name, p.Status.Phase, p.Spec.NodeName, c, wantUnschedulable)
	}
	d, err := a.DescribePod("default", p.Name)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(d.Events, eventFailedScheduling); n != 1 || !hasEventOf(d.Events, agentapi.EventWarning, eventFailedScheduling, wantUnschedulable) {
		t.Errorf("pod %s: %d FailedScheduling events, want 1 with the scheduler's message: %+v", p.Name, n, d.Events)
	}
	if eventCount(d.Events, "Scheduled") != 0 {
		t.Errorf("pod %s: a Scheduled event before it was placed: %+v", p.Name, d.Events)
	}
}

func TestReplicaSetPodWaitsUnschedulableUnderPressureWithoutChurn(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	a.apply(t, bestEffortReplicaSet)
	waitFor(t, "the ReplicaSet made its pod", func() bool { return len(a.ownedPods("ReplicaSet")) == 1 })
	for range 5 { // controller passes: the pod counts, nothing is made again
		a.reconcileWorkloads()
	}
	p := a.onlyPod(t, "ReplicaSet")
	a.checkUnschedulable(t, p)
	rs, _ := a.DescribeWorkload(agentapi.ResourceReplicaSet, "default", "web")
	if n := eventCount(rs.Events, "SuccessfulCreate"); n != 1 || rs.ReplicaSet.Status.Replicas != 1 || rs.ReplicaSet.Status.AvailableReplicas != 0 {
		t.Errorf("ReplicaSet: %d creates, status %+v; want 1 create, 1 replica, none available", n, rs.ReplicaSet.Status)
	}
	if sandboxes, _ := rt.Counts(); sandboxes != 0 {
		t.Errorf("the runtime holds %d sandboxes for a pod not scheduled", sandboxes)
	}
	// The scheduler reports a pod that still does not fit again after
	// its unschedulable queue's flush period, not before.
	w := a.worker(string(p.UID))
	w.mu.Lock()
	w.desired.unscheduled.recorded = w.desired.unscheduled.recorded.Add(-unschedulableRetryPeriod + time.Minute)
	w.mu.Unlock()
	a.reconcileWorkloads()
	if n := eventCount(w.events.list(), eventFailedScheduling); n != 1 {
		t.Errorf("%d FailedScheduling events 4 minutes on, want 1", n)
	}
	w.mu.Lock()
	w.desired.unscheduled.recorded = w.desired.unscheduled.recorded.Add(-time.Minute)
	w.mu.Unlock()
	a.reconcileWorkloads()
	if n := eventCount(w.events.list(), eventFailedScheduling); n != 2 {
		t.Errorf("%d FailedScheduling events 5 minutes on, want 2", n)
	}
	if taints := a.Node().Node.Spec.Taints; len(taints) != 1 || taints[0].Key != v1.TaintNodeMemoryPressure || taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("node taints %v, want memory-pressure:NoSchedule", taints)
	}

	signals.set(plenty())
	a.housekeep(context.Background())
	waitFor(t, "the pod runs once the pressure is gone", func() bool { return a.pod(t, p.Name).Status.Phase == v1.PodRunning })
	got := a.pod(t, p.Name)
	if c := podCondition(got, v1.PodScheduled); c.Status != v1.ConditionTrue || got.Spec.NodeName != "node-1" || got.UID != p.UID {
		t.Errorf("scheduled pod: PodScheduled %+v nodeName %q uid %s (was %s)", c, got.Spec.NodeName, got.UID, p.UID)
	}
	d, _ := a.DescribePod("default", p.Name)
	if !hasEventOf(d.Events, agentapi.EventNormal, "Scheduled", "Successfully assigned default/"+p.Name+" to node-1") {
		t.Errorf("no Scheduled event: %+v", d.Events)
	}
	if len(a.ownedPods("ReplicaSet")) != 1 {
		t.Errorf("ReplicaSet pods %v, want the one", keys(a.ownedPods("ReplicaSet")))
	}
}

func TestUnschedulablePodIsDeletedAndReplacedPending(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowDisk()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	a.apply(t, bestEffortReplicaSet)
	waitFor(t, "the ReplicaSet made its pod", func() bool { return len(a.ownedPods("ReplicaSet")) == 1 })
	first := a.onlyPod(t, "ReplicaSet")
	if _, err := a.Delete(context.Background(), "default", first.Name, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pending pod is gone", func() bool { _, err := a.DescribePod("default", first.Name); return err != nil })
	waitFor(t, "a replacement", func() bool { return len(a.ownedPods("ReplicaSet")) == 1 })
	second := a.onlyPod(t, "ReplicaSet")
	if second.Name == first.Name {
		t.Fatalf("replacement has the deleted pod's name %s", second.Name)
	}
	a.checkUnschedulable(t, second)
}

func TestStatefulSetWaitsForItsUnschedulablePodInOrder(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	a.apply(t, bestEffortStatefulSet)
	waitFor(t, "db-0 is made", func() bool { return len(a.ownedPods("StatefulSet")) == 1 })
	for range 5 {
		a.reconcileWorkloads()
	}
	a.checkUnschedulable(t, a.onlyPod(t, "StatefulSet")) // OrderedReady: db-1 waits for db-0
	if p := a.onlyPod(t, "StatefulSet"); p.Name != "db-0" {
		t.Fatalf("pod %s, want db-0", p.Name)
	}
	signals.set(plenty())
	a.housekeep(context.Background())
	waitFor(t, "db-0 and db-1 run", func() bool {
		pods := a.ownedPods("StatefulSet")
		return len(pods) == 2 && ready(pods["db-0"]) && ready(pods["db-1"])
	})
}

func TestBarePodsKeepKubeletsRejection(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	// An ownerReference to no berth workload: a bare pod all the same.
	a.apply(t, strings.Replace(bestEffortPod, "metadata: {name: besteffort}",
		"metadata: {name: besteffort, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: other, uid: 0a1b, controller: true}]}", 1))
	waitFor(t, "besteffort is rejected", func() bool { return a.pod(t, "besteffort").Status.Phase == v1.PodFailed })
	if p := a.pod(t, "besteffort"); p.Status.Reason != "Evicted" || p.Spec.NodeName != "node-1" {
		t.Errorf("bare pod: reason %q nodeName %q, want Evicted on node-1", p.Status.Reason, p.Spec.NodeName)
	}
}

func TestDaemonSetPodToleratesPressure(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	a.apply(t, strings.NewReplacer("kind: ReplicaSet", "kind: DaemonSet", "  replicas: 1\n", "").Replace(bestEffortReplicaSet))
	waitFor(t, "the DaemonSet's pod runs under MemoryPressure", func() bool {
		pods := a.ownedPods("DaemonSet")
		for _, p := range pods {
			return p.Status.Phase == v1.PodRunning
		}
		return false
	})
}

func TestRestartedAgentKeepsControllerPodsPendingUnderPressure(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	signals := &fakeSignals{obs: lowMemory()}
	first := startSchedulingAgent(t, rt, dir, signals)
	first.housekeep(context.Background())
	first.apply(t, bestEffortReplicaSet)
	waitFor(t, "the ReplicaSet made its pod", func() bool { return len(first.ownedPods("ReplicaSet")) == 1 })
	first.stop()

	// The restarted agent's first measurement is held: until it is
	// done, the controllers make nothing (the pod would be admitted
	// before the pressure is known, and fail).
	gated := &gatedSignals{inner: signals, entered: make(chan struct{}), release: make(chan struct{})}
	second := startSchedulingAgent(t, rt, dir, gated)
	<-gated.entered
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := len(second.ownedPods("ReplicaSet")); n != 0 {
			t.Fatalf("the controllers made %d pods before the first measurement", n)
		}
	}
	close(gated.release)
	waitFor(t, "the ReplicaSet makes its pod again", func() bool { return len(second.ownedPods("ReplicaSet")) == 1 })
	second.checkUnschedulable(t, second.onlyPod(t, "ReplicaSet"))
	if sandboxes, _ := rt.Counts(); sandboxes != 0 {
		t.Errorf("the runtime holds %d sandboxes after the restart, want none: the pod waits", sandboxes)
	}
}

func TestJobCountsItsUnschedulablePodActive(t *testing.T) {
	rt := criclienttest.New()
	signals := &fakeSignals{obs: lowMemory()}
	a := startSchedulingAgent(t, rt, t.TempDir(), signals)
	a.housekeep(context.Background())
	a.apply(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	waitFor(t, "the Job made its pod", func() bool { return len(a.ownedPods("Job")) == 1 })
	for range 5 {
		a.reconcileWorkloads()
	}
	a.checkUnschedulable(t, a.onlyPod(t, "Job"))
	d, err := a.DescribeWorkload(agentapi.ResourceJob, "default", "once")
	if err != nil {
		t.Fatal(err)
	}
	if d.Job.Status.Active != 1 || d.Job.Status.Failed != 0 || eventCount(d.Events, "SuccessfulCreate") != 1 {
		t.Errorf("Job status %+v, events %+v; want 1 active, none failed, one pod made", d.Job.Status, d.Events)
	}
}

// gatedSignals holds its first Observe until release is closed, saying
// on entered that it was called.
type gatedSignals struct {
	inner   SignalObserver
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedSignals) Observe(ctx context.Context) (eviction.Observations, error) {
	g.once.Do(func() {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	})
	return g.inner.Observe(ctx)
}
