package probe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// unit is the probe "second" of these tests.
const unit = 10 * time.Millisecond

// scriptedExec hands every ExecSync call to the test, which answers it with
// an exit code: the test decides each probe's result and knows exactly how
// many probes the worker has completed (a worker starts a new probe only
// after it has applied the previous result).
type scriptedExec struct{ calls chan *execCall }

type execCall struct {
	ctx   context.Context
	cmd   []string
	reply chan int32
}

func newScriptedExec() *scriptedExec { return &scriptedExec{calls: make(chan *execCall)} }

func (s *scriptedExec) ExecSync(ctx context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	call := &execCall{ctx: ctx, cmd: cmd, reply: make(chan int32, 1)}
	select {
	case s.calls <- call:
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
	select {
	case code := <-call.reply:
		return []byte("exit code " + string(rune('0'+code))), nil, code, nil
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
}

// next waits for the worker's next probe.
func (s *scriptedExec) next(t *testing.T) *execCall {
	t.Helper()
	select {
	case call := <-s.calls:
		return call
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a probe")
		return nil
	}
}

// answer lets the next probe exit with code.
func (s *scriptedExec) answer(t *testing.T, code int32) {
	t.Helper()
	s.next(t).reply <- code
}

func newTestManager(t *testing.T, ex Execer, opts Options) *Manager {
	t.Helper()
	opts.SecondsUnit = unit
	m := NewManager(ex, opts)
	t.Cleanup(m.Close)
	return m
}

func fastExecProbe(cmd string, failureThreshold, successThreshold int32) *v1.Probe {
	p := execProbeSpec(cmd)
	p.PeriodSeconds, p.TimeoutSeconds = 1, 100
	p.FailureThreshold, p.SuccessThreshold = failureThreshold, successThreshold
	return p
}

func addContainer(t *testing.T, m *Manager, c *v1.Container, startedAt time.Time) {
	t.Helper()
	if err := m.Add("pod-1", podTarget(c), startedAt); err != nil {
		t.Fatal(err)
	}
}

func statusOf(t *testing.T, m *Manager) Status {
	t.Helper()
	s, ok := m.Status("c1")
	if !ok {
		t.Fatal("container c1 is not tracked")
	}
	return s
}

func nextUpdate(t *testing.T, m *Manager) Update {
	t.Helper()
	select {
	case u := <-m.Updates():
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for an update")
		return Update{}
	}
}

func noUpdate(t *testing.T, m *Manager) {
	t.Helper()
	select {
	case u := <-m.Updates():
		t.Fatalf("unexpected update %+v", u)
	default:
	}
}

func TestInitialResults(t *testing.T) {
	m := newTestManager(t, newScriptedExec(), Options{})
	addContainer(t, m, &v1.Container{Name: "app",
		LivenessProbe:  fastExecProbe("live", 3, 1),
		ReadinessProbe: fastExecProbe("ready", 3, 1),
	}, time.Now())
	if s := statusOf(t, m); !s.Started || s.Ready || s.LivenessFailed || s.StartupFailed {
		t.Errorf("with liveness and readiness: %+v, want started, not ready, alive", s)
	}

	addOther := func(id string, c *v1.Container) Status {
		t.Helper()
		target := podTarget(c)
		target.ContainerID = id
		if err := m.Add("pod-1", target, time.Now()); err != nil {
			t.Fatal(err)
		}
		s, _ := m.Status(id)
		return s
	}
	if s := addOther("c2", &v1.Container{Name: "plain"}); !s.Started || !s.Ready {
		t.Errorf("without probes: %+v, want started and ready", s)
	}
	if s := addOther("c3", &v1.Container{Name: "slow", StartupProbe: fastExecProbe("start", 3, 1)}); s.Started || s.Ready || s.StartupFailed {
		t.Errorf("with a startup probe: %+v, want neither started nor ready", s)
	}
	if _, ok := m.Status("nope"); ok {
		t.Error("an unknown container has a status")
	}
}

func TestLivenessFailsOnlyAtFailureThreshold(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	addContainer(t, m, &v1.Container{Name: "app", LivenessProbe: fastExecProbe("live", 3, 1)}, time.Now())

	fx.answer(t, 1)
	fx.answer(t, 0) // a success breaks the run of failures
	fx.answer(t, 1)
	fx.answer(t, 1)
	third := fx.next(t) // the previous result has been applied
	if s := statusOf(t, m); s.LivenessFailed {
		t.Fatalf("failed after two failures in a row: %+v", s)
	}
	noUpdate(t, m)

	third.reply <- 1
	u := nextUpdate(t, m)
	if u.Kind != Liveness || u.Result != Failure || u.ContainerID != "c1" || u.ContainerName != "app" || u.PodUID != "pod-1" || u.Message != "exit code 1" {
		t.Errorf("update %+v", u)
	}
	if s := statusOf(t, m); !s.LivenessFailed {
		t.Errorf("status %+v, want liveness failed", s)
	}

	// On hold until the container is replaced: no more probes.
	select {
	case call := <-fx.calls:
		t.Errorf("probed %q after the liveness verdict", call.cmd)
	case <-time.After(20 * unit):
	}
}

func TestReadinessNeedsSuccessThreshold(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	addContainer(t, m, &v1.Container{Name: "app", ReadinessProbe: fastExecProbe("ready", 1, 2)}, time.Now())

	fx.answer(t, 0)
	second := fx.next(t)
	if s := statusOf(t, m); s.Ready {
		t.Fatalf("ready after one success: %+v", s)
	}
	noUpdate(t, m)
	second.reply <- 0
	if u := nextUpdate(t, m); u.Kind != Readiness || u.Result != Success {
		t.Errorf("update %+v", u)
	}
	if s := statusOf(t, m); !s.Ready {
		t.Errorf("status %+v, want ready", s)
	}

	// Readiness keeps probing; one failure (threshold 1) makes it unready.
	fx.answer(t, 0)
	fx.answer(t, 1)
	if u := nextUpdate(t, m); u.Kind != Readiness || u.Result != Failure {
		t.Errorf("update %+v", u)
	}
	if s := statusOf(t, m); s.Ready || s.LivenessFailed {
		t.Errorf("status %+v, want unready (and not dead)", s)
	}
}

func TestInitialDelayCountsFromContainerStart(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	p := fastExecProbe("ready", 1, 1)
	p.InitialDelaySeconds = 20
	started := time.Now()
	addContainer(t, m, &v1.Container{Name: "app", ReadinessProbe: p}, started)
	fx.next(t).reply <- 0
	if waited := time.Since(started); waited < 20*unit {
		t.Errorf("first probe after %v, want at least the initial delay of %v", waited, 20*unit)
	}

	// A container that started long ago is probed without waiting again.
	target := podTarget(&v1.Container{Name: "old", ReadinessProbe: p})
	target.ContainerID = "c2"
	if err := m.Add("pod-1", target, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	fx.next(t).reply <- 0
	waitFor(t, "the old container to be ready", func() bool { s, _ := m.Status("c2"); return s.Ready })
}

// gatedExec answers probes by command: "start" with the current startup exit
// code, anything else with 0, counting calls per command.
type gatedExec struct {
	startCode atomic.Int32
	mu        sync.Mutex
	calls     map[string]int
}

func (g *gatedExec) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	g.mu.Lock()
	g.calls[cmd[0]]++
	g.mu.Unlock()
	if cmd[0] == "start" {
		return nil, nil, g.startCode.Load(), nil
	}
	return nil, nil, 0, nil
}

func (g *gatedExec) count(cmd string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[cmd]
}

func TestStartupProbeGatesLivenessAndReadiness(t *testing.T) {
	g := &gatedExec{calls: map[string]int{}}
	g.startCode.Store(1)
	m := newTestManager(t, g, Options{})
	addContainer(t, m, &v1.Container{Name: "app",
		StartupProbe:   fastExecProbe("start", 1000, 1),
		LivenessProbe:  fastExecProbe("live", 1, 1),
		ReadinessProbe: fastExecProbe("ready", 1, 1),
	}, time.Now())

	waitFor(t, "three startup probes", func() bool { return g.count("start") >= 3 })
	if live, ready := g.count("live"), g.count("ready"); live+ready != 0 {
		t.Fatalf("liveness ran %d and readiness %d times before the container started", live, ready)
	}
	if s := statusOf(t, m); s.Started || s.Ready {
		t.Fatalf("status %+v before the startup probe succeeded", s)
	}

	g.startCode.Store(0)
	waitFor(t, "the container to start and become ready", func() bool { s := statusOf(t, m); return s.Started && s.Ready })
	// Liveness and readiness run on timers of their own: readiness may
	// report first.
	waitFor(t, "liveness to run once the container started", func() bool { return g.count("live") > 0 })
	startups := g.count("start")
	time.Sleep(20 * unit)
	if n := g.count("start"); n != startups {
		t.Errorf("startup probe ran %d more times after it succeeded", n-startups)
	}
}

func TestStartupProbeFailure(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	addContainer(t, m, &v1.Container{Name: "app", StartupProbe: fastExecProbe("start", 2, 1)}, time.Now())
	fx.answer(t, 1)
	fx.answer(t, 1)
	if u := nextUpdate(t, m); u.Kind != Startup || u.Result != Failure {
		t.Errorf("update %+v", u)
	}
	if s := statusOf(t, m); !s.StartupFailed || s.Started {
		t.Errorf("status %+v, want startup failed", s)
	}
}

func TestUnperformedProbesAreDiscarded(t *testing.T) {
	var attempts []Attempt
	var mu sync.Mutex
	broken := execFunc(func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
		return nil, nil, 0, errors.New("runtime unavailable") // neither a result nor a timeout
	})
	m := newTestManager(t, broken, Options{OnAttempt: func(a Attempt) {
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
	}})
	addContainer(t, m, &v1.Container{Name: "app", LivenessProbe: fastExecProbe("live", 1, 1)}, time.Now())
	waitFor(t, "a few attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(attempts) >= 3 })
	if s := statusOf(t, m); s.LivenessFailed {
		t.Errorf("status %+v: an exec that could not run counted as a failure", s)
	}
	mu.Lock()
	a := attempts[0]
	mu.Unlock()
	if a.Result != Unknown || a.Kind != Liveness || a.ContainerID != "c1" || a.Message == "" {
		t.Errorf("attempt %+v", a)
	}
	noUpdate(t, m)
}

func TestRemoveStopsWorkers(t *testing.T) {
	fx := newScriptedExec()
	m := NewManager(fx, Options{SecondsUnit: unit})
	addContainer(t, m, &v1.Container{Name: "app",
		LivenessProbe:  fastExecProbe("live", 1, 1),
		ReadinessProbe: fastExecProbe("ready", 1, 1),
	}, time.Now())
	inFlight := fx.next(t)

	m.Remove("c1")
	select {
	case <-inFlight.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the probe in flight was not cancelled")
	}
	if _, ok := m.Status("c1"); ok {
		t.Error("a removed container still has a status")
	}
	deadline := time.After(20 * unit)
	for waiting := true; waiting; {
		select {
		case call := <-fx.calls:
			if call.ctx.Err() == nil {
				t.Errorf("probe %q started after Remove", call.cmd)
			}
		case <-deadline:
			waiting = false
		}
	}

	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: a worker is still running")
	}
	if _, open := <-m.Updates(); open {
		t.Error("Updates is still open after Close")
	}
	if err := m.Add("pod-1", podTarget(&v1.Container{}), time.Now()); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
}

func TestRemovePod(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	addContainer(t, m, &v1.Container{Name: "app", LivenessProbe: fastExecProbe("live", 1, 1)}, time.Now())
	inFlight := fx.next(t)
	m.RemovePod("other-pod")
	if _, ok := m.Status("c1"); !ok {
		t.Fatal("RemovePod removed another pod's container")
	}
	m.RemovePod("pod-1")
	<-inFlight.ctx.Done()
	if _, ok := m.Status("c1"); ok {
		t.Error("container still tracked after RemovePod")
	}
}

func TestAddIsIdempotent(t *testing.T) {
	g := &gatedExec{calls: map[string]int{}}
	m := newTestManager(t, g, Options{})
	c := &v1.Container{Name: "app", ReadinessProbe: fastExecProbe("ready", 1, 1)}
	addContainer(t, m, c, time.Now())
	waitFor(t, "ready", func() bool { return statusOf(t, m).Ready })
	addContainer(t, m, c, time.Now())
	if s := statusOf(t, m); !s.Ready {
		t.Errorf("re-adding reset the container's results: %+v", s)
	}
	if err := m.Add("pod-1", Target{ContainerID: "c9"}, time.Now()); err == nil {
		t.Error("Add without a container spec succeeded")
	}
}

func TestSetTerminatingQuietsLiveness(t *testing.T) {
	fx := newScriptedExec()
	m := newTestManager(t, fx, Options{})
	addContainer(t, m, &v1.Container{Name: "app",
		LivenessProbe:  fastExecProbe("live", 1, 1),
		ReadinessProbe: fastExecProbe("ready", 1, 1),
	}, time.Now())
	for !statusOf(t, m).LivenessFailed {
		call := fx.next(t)
		call.reply <- map[string]int32{"live": 1, "ready": 0}[call.cmd[0]]
	}
	m.SetTerminating("pod-1")
	if s := statusOf(t, m); s.LivenessFailed {
		t.Errorf("status %+v, want liveness quiet while terminating", s)
	}
	for {
		u := nextUpdate(t, m)
		if u.Kind == Liveness && u.Result == Success {
			break
		}
	}
	// Readiness keeps running; liveness never probes again.
	for i := 0; i < 3; i++ {
		call := fx.next(t)
		if call.cmd[0] != "ready" {
			t.Fatalf("probe %q ran while the pod terminates", call.cmd)
		}
		call.reply <- 0
	}
}
