package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// fakePodCgroups records the pods whose cgroups were made and removed.
type fakePodCgroups struct {
	mu      sync.Mutex
	calls   []string
	failing error
}

func (f *fakePodCgroups) Ensure(_ context.Context, pod *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ensure "+pod.Name)
	return f.failing
}

func (f *fakePodCgroups) Remove(_ context.Context, pod *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "remove "+pod.Name)
	return nil
}

const cgroupPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// The pod's cgroup is made before its sandbox, as kubelet's SyncPod does;
// when it cannot be made no sandbox is, and the pod says why. The host's
// cleanup of the pod removes it.
func TestPodCgroupIsMadeBeforeTheSandbox(t *testing.T) {
	rt := criclienttest.New()
	w := newSoloWorker(t, rt, cgroupPod)
	cgs := &fakePodCgroups{failing: errors.New("no memory controller")}
	w.deps.podCgroups = cgs
	if calls, _ := w.syncOnce(t); slices.Contains(calls, "runp web") {
		t.Errorf("a sandbox was made without its pod cgroup: %v", calls)
	}
	if n := eventCount(w.events.list(), "FailedCreatePodContainer"); n != 1 {
		t.Errorf("%d FailedCreatePodContainer events, want 1", n)
	}
	cgs.mu.Lock()
	cgs.failing = nil
	cgs.mu.Unlock()
	if calls, _ := w.syncOnce(t); !slices.Contains(calls, "runp web") {
		t.Errorf("no sandbox once the pod cgroup is made: %v", calls)
	}
	if err := w.cleanUpHost(w.desired); err != nil {
		t.Fatal(err)
	}
	cgs.mu.Lock()
	defer cgs.mu.Unlock()
	if want := []string{"ensure web", "ensure web", "remove web"}; !slices.Equal(cgs.calls, want) {
		t.Errorf("pod cgroup calls %v, want %v", cgs.calls, want)
	}
}

// A pod's runtimeClassName is the runtime handler its sandbox is made
// with; a pod without one gets the runtime's default ("").
func TestRuntimeClassNameIsTheSandboxHandler(t *testing.T) {
	for _, tc := range []struct{ class, want string }{{"", ""}, {"runc-system", "runc-system"}} {
		rt := criclienttest.New()
		pod := cgroupPod
		if tc.class != "" {
			pod = strings.Replace(pod, "spec:\n", "spec:\n  runtimeClassName: "+tc.class+"\n", 1)
		}
		w := newSoloWorker(t, rt, pod)
		if calls, _ := w.syncOnce(t); !slices.Contains(calls, "runp web") {
			t.Fatalf("no sandbox made: %v", calls)
		}
		sbs, err := rt.ListPodSandbox(context.Background(), nil)
		if err != nil || len(sbs) != 1 {
			t.Fatalf("sandboxes %v, %v", sbs, err)
		}
		if got := rt.SandboxHandler(sbs[0].Id); got != tc.want {
			t.Errorf("runtimeClassName %q: sandbox handler %q, want %q", tc.class, got, tc.want)
		}
	}
}
