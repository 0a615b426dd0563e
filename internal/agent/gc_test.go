package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/plan"
)

func ids(cs []plan.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// A crash-looping "app" (running c4, exited c3 c2 c1) and a finished "job"
// (exited j1 only).
func gcObserved(now time.Time) plan.Observed {
	exited := func(id, name string, age time.Duration) plan.Container {
		return plan.Container{ID: id, Name: name, State: plan.StateExited, CreatedAt: now.Add(-age)}
	}
	return plan.Observed{Containers: []plan.Container{
		exited("c1", "app", 3*time.Hour), exited("c3", "app", 30*time.Minute),
		{ID: "c4", Name: "app", State: plan.StateRunning, CreatedAt: now.Add(-10 * time.Minute)},
		exited("c2", "app", 2*time.Hour), exited("j1", "job", 5*time.Hour),
	}}
}

func TestContainerGCKeepsTheNewestAndMaxPerPodContainerExited(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name          string
		policy        ContainerGCPolicy
		remove, spare []string
	}{
		{"kubelet's defaults", DefaultContainerGCPolicy(), []string{"c2", "c1"}, []string{"c3"}},
		{"keep none", ContainerGCPolicy{MaxPerPodContainer: 0}, []string{"c3", "c2", "c1"}, nil},
		{"keep all", ContainerGCPolicy{MaxPerPodContainer: -1}, nil, []string{"c3", "c2", "c1"}},
		{"minimum age", ContainerGCPolicy{MinAge: time.Hour, MaxPerPodContainer: 1}, []string{"c1"}, []string{"c2"}},
	} {
		remove, spare := containerGC(gcObserved(now), tc.policy, now)
		if !slices.Equal(ids(remove), tc.remove) || !slices.Equal(ids(spare), tc.spare) {
			t.Errorf("%s: remove %v spare %v; want %v and %v", tc.name, ids(remove), ids(spare), tc.remove, tc.spare)
		}
	}
}

func TestEnforceMaxContainersSharesThenRemovesTheOldest(t *testing.T) {
	now := time.Now()
	mk := func(uid string, ages ...time.Duration) *podGC {
		p := &podGC{w: &podWorker{uid: uid}}
		for i, age := range ages {
			p.spare = append(p.spare, plan.Container{ID: uid + string(rune('0'+i)), Name: "app", State: plan.StateExited, CreatedAt: now.Add(-age)})
		}
		return p
	}
	a, b := mk("a", time.Minute, 2*time.Minute, 3*time.Minute), mk("b", 5*time.Minute)
	enforceMaxContainers([]*podGC{a, b}, 2)
	if !slices.Equal(ids(a.remove), []string{"a1", "a2"}) || len(b.remove) != 0 {
		t.Errorf("limit 2: remove %v and %v; want [a1 a2] and none (one per pod and name)", ids(a.remove), ids(b.remove))
	}
	a, b = mk("a", time.Minute, 2*time.Minute, 3*time.Minute), mk("b", 5*time.Minute)
	enforceMaxContainers([]*podGC{a, b}, 1)
	if !slices.Equal(ids(a.remove), []string{"a1", "a2"}) || !slices.Equal(ids(b.remove), []string{"b0"}) {
		t.Errorf("limit 1: remove %v and %v; want [a1 a2] and the oldest, [b0]", ids(a.remove), ids(b.remove))
	}
	a = mk("a", time.Minute)
	enforceMaxContainers([]*podGC{a}, -0)
	if !slices.Equal(ids(a.remove), []string{"a0"}) {
		t.Errorf("limit 0: remove %v; want [a0]", ids(a.remove))
	}
}

// A crash-looping pod's exited instances that the syncs and
// DeleteAllUnusedContainers keep for --minimum-container-ttl-duration go
// at the periodic collection once they are old enough, with their log
// files: the newest and the one before stay.
func TestContainerGCRemovesDeadContainersAndTheirLogs(t *testing.T) {
	rt := criclienttest.New()
	clk := clocktesting.NewFakeClock(time.Now())
	a, _ := newTestAgent(t, rt, t.TempDir(), clk)
	a.deps.containerGC = ContainerGCPolicy{MinAge: time.Hour, MaxPerPodContainer: 1, MaxContainers: -1}
	pod := bundle(t, `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "1"]}
`).Pods[0].Pod
	a.mu.Lock()
	w := a.startWorkerLocked(desiredPod{pod: pod}) // a.stopping is false: its goroutine runs
	a.mu.Unlock()
	ctx := context.Background()
	waitFor(t, "four instances", func() bool {
		clk.Step(time.Second) // past each back-off
		w.trigger()
		_, n := rt.Counts()
		return n >= 4
	})
	a.endLife() // the worker stops: the collection below is alone
	a.running.Wait()
	obs, err := a.deps.observe(ctx, w.uid)
	if err != nil {
		t.Fatal(err)
	}
	paths := obs.logPaths(w.logDirectory())
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("log\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := len(obs.plan.Containers)
	if err := a.ContainerGC().DeleteAllUnusedContainers(ctx); err != nil {
		t.Fatal(err)
	}
	if _, n := rt.Counts(); n != before {
		t.Fatalf("%d of %d containers left: younger than the minimum age, all stay", n, before)
	}
	// The periodic collection removes them once they are old enough.
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); a.containerGCLoop(loopCtx) }()
	clk.Step(2 * time.Hour)
	waitFor(t, "a collection", func() bool {
		clk.Step(a.cfg.GC.ContainerPeriod)
		_, n := rt.Counts()
		return n <= 2
	})
	stopLoop()
	<-loopDone
	instances := obs.plan.Instances("app")
	if _, n := rt.Counts(); n != 2 {
		t.Fatalf("%d containers left; want the newest and the previous", n)
	}
	for i, c := range instances {
		_, err := os.Stat(paths[c.ID])
		if gone := errors.Is(err, fs.ErrNotExist); gone != (i >= 2) {
			t.Errorf("instance %d (%s): log removed = %v, err %v", i, paths[c.ID], gone, err)
		}
	}
}
