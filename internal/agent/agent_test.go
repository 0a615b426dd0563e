package agent

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// testAgent runs an agent against rt until the test ends.
type testAgent struct {
	*Agent
	volumes *fakeVolumes
	stop    func()
	clock   *clocktesting.FakeClock // the agent's clock when it is a fake one
}

func startTestAgent(t *testing.T, rt *criclienttest.Runtime) *testAgent {
	t.Helper()
	return startTestAgentIn(t, rt, t.TempDir())
}

// startTestAgentIn runs an agent whose root and log directories are under
// dir: a second agent started in the same dir finds the first's store.
func startTestAgentIn(t *testing.T, rt *criclienttest.Runtime, dir string) *testAgent {
	t.Helper()
	return startTestAgentWith(t, rt, dir, &fakeVolumes{root: dir + "/root"})
}

// startTestAgentWith is startTestAgentIn with the given volumes.
func startTestAgentWith(t *testing.T, rt *criclienttest.Runtime, dir string, vols *fakeVolumes) *testAgent {
	t.Helper()
	a, _ := newTestAgent(t, rt, dir, clock.RealClock{})
	return runTestAgent(t, a, vols)
}

// runTestAgent runs a until the test ends, on vols.
func runTestAgent(t *testing.T, a *Agent, vols *fakeVolumes) *testAgent {
	t.Helper()
	vols.claims = a.claims
	a.deps.volumes = claimVolumes{volumeManager: vols, claims: a.claims}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent Run: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	waitFor(t, "the agent is ready", func() bool { return a.checkReady() == nil })
	fake, _ := a.deps.clock.(*clocktesting.FakeClock)
	return &testAgent{Agent: a, volumes: vols, stop: stop, clock: fake}
}

// newTestAgent returns an agent on rt and clk, with fake volumes, not
// running: root and log directories are under dir.
func newTestAgent(t *testing.T, rt *criclienttest.Runtime, dir string, clk clock.WithTicker) (*Agent, *fakeVolumes) {
	t.Helper()
	return newTestAgentWith(t, rt, dir, clk, func(*Config) {})
}

// newTestAgentWith is newTestAgent with the configuration changed by tune.
func newTestAgentWith(t *testing.T, rt *criclienttest.Runtime, dir string, clk clock.WithTicker, tune func(*Config)) (*Agent, *fakeVolumes) {
	t.Helper()
	cfg := Config{
		Runtime: rt, Images: rt, RootDir: dir + "/root", PodLogDir: dir + "/logs", NodeName: "node-1",
		Backoff:      backoff.Config{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond},
		RelistPeriod: 100 * time.Millisecond, ProbeSecond: 10 * time.Millisecond, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	tune(&cfg)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vols := &fakeVolumes{root: dir + "/root"}
	a.deps.volumes = vols
	t.Cleanup(func() { a.deps.probes.Close(); a.endLife() }) // Run does both too
	return a, vols
}

// testWriter sends the agent's log to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bundle decodes manifests as `berth run` does.
func bundle(t *testing.T, yaml string) *manifest.Bundle {
	t.Helper()
	b, err := manifest.Decode(strings.NewReader(yaml), "/manifests/test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (a *testAgent) apply(t *testing.T, yaml string) agentapi.ApplyResponse {
	t.Helper()
	resp, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, yaml)})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return resp
}

func (a *testAgent) pod(t *testing.T, name string) v1.Pod {
	t.Helper()
	d, err := a.DescribePod("default", name)
	if err != nil {
		t.Fatalf("describe %s: %v", name, err)
	}
	return d.Pod
}

func ctrStatus(pod v1.Pod, name string) v1.ContainerStatus {
	for _, st := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if st.Name == name {
			return st
		}
	}
	return v1.ContainerStatus{}
}

func ready(pod v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func indexOf(calls []string, call string) int { return slices.Index(calls, call) }

const initPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
  - {name: first, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
  - {name: second, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

func TestInitContainersRunInOrderBeforeTheApp(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	resp := a.apply(t, initPod)
	if len(resp.Pods()) != 1 || resp.Pods()[0].Outcome != agentapi.OutcomeCreated || resp.Pods()[0].UID == "" {
		t.Fatalf("apply answered %+v; want web created with a uid", resp)
	}
	waitFor(t, "web is running and ready", func() bool {
		p := a.pod(t, "web")
		return p.Status.Phase == v1.PodRunning && ready(p)
	})
	calls := rt.Calls()
	order := []string{"runp web", "start first", "create second", "start second", "create app", "start app"}
	for i := 1; i < len(order); i++ {
		if a, b := indexOf(calls, order[i-1]), indexOf(calls, order[i]); a < 0 || b < 0 || a > b {
			t.Fatalf("calls %v: want %q before %q", calls, order[i-1], order[i])
		}
	}
	if again := a.apply(t, initPod); again.Pods()[0].Outcome != agentapi.OutcomeUnchanged {
		t.Errorf("applying the same manifest again: %+v; want unchanged", again)
	}
	if n := strings.Count(strings.Join(rt.Calls(), "\n"), "runp web"); n != 1 {
		t.Errorf("%d sandboxes created for one pod; want 1", n)
	}
}

func TestCrashingContainerBacksOffAndCountsRestarts(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "3"]}
`)
	sawBackOff := false
	waitFor(t, "three restarts", func() bool {
		st := ctrStatus(a.pod(t, "crash"), "app")
		if st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		return st.RestartCount >= 3
	})
	if !sawBackOff {
		t.Errorf("never saw the container waiting in CrashLoopBackOff")
	}
	st := ctrStatus(a.pod(t, "crash"), "app")
	if st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("lastState %+v; want terminated with exit code 3", st.LastTerminationState)
	}
	if _, containers := rt.Counts(); containers > 2 {
		t.Errorf("%d containers kept; want the newest and the previous only", containers)
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	resp := a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: gone}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"], volumeMounts: [{name: scratch, mountPath: /scratch}]}
`)
	waitFor(t, "gone runs", func() bool { return a.pod(t, "gone").Status.Phase == v1.PodRunning })
	if _, err := a.Delete(context.Background(), "default", "gone", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod is forgotten", func() bool { return len(a.ListPods("").Items) == 0 })
	if sandboxes, containers := rt.Counts(); sandboxes+containers != 0 {
		t.Errorf("runtime keeps %d sandboxes and %d containers after delete", sandboxes, containers)
	}
	if !slices.Contains(a.volumes.torndown, resp.Pods()[0].UID) {
		t.Errorf("volumes of %s not torn down (torn down: %v)", resp.Pods()[0].UID, a.volumes.torndown)
	}
	if _, err := os.Stat(a.deps.podDir(resp.Pods()[0].UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod directory left: %v", err)
	}
	if _, err := a.Delete(context.Background(), "default", "gone", nil); err == nil {
		t.Errorf("deleting a deleted pod succeeded")
	}
}

func TestRestartedAgentResumesWithoutDuplicates(t *testing.T) {
	rt := criclienttest.New()
	first := startTestAgent(t, rt)
	first.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: survivor}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	waitFor(t, "survivor runs", func() bool { return first.pod(t, "survivor").Status.Phase == v1.PodRunning })
	if err := rt.Exit("app", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "one restart", func() bool {
		st := ctrStatus(first.pod(t, "survivor"), "app")
		return st.RestartCount == 1 && st.State.Running != nil
	})
	first.stop()
	second := startTestAgent(t, rt)
	waitFor(t, "the new agent reports the pod running", func() bool {
		st := ctrStatus(second.pod(t, "survivor"), "app")
		return st.State.Running != nil && st.RestartCount == 1
	})
	time.Sleep(300 * time.Millisecond) // a few relists
	if sandboxes, containers := rt.Counts(); sandboxes != 1 || containers != 2 {
		t.Errorf("after the restart the runtime holds %d sandboxes and %d containers; want 1 and 2", sandboxes, containers)
	}
}

// A restarted agent shows its pods as they run from the moment it is
// ready, while their workers' first syncs still set their volumes up
// (held here): `berth exec` right after a restart finds the container.
func TestRecoveredPodsShowTheirStatusAtOnce(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: survivor}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	exited := false // once: the status may still say running while the runtime has the exit
	waitFor(t, "survivor runs after one restart", func() bool {
		st := ctrStatus(first.pod(t, "survivor"), "app")
		if !exited && st.State.Running != nil && st.RestartCount == 0 {
			if err := rt.Exit("app", 1); err != nil {
				t.Fatal(err)
			}
			exited = true
		}
		return st.State.Running != nil && st.RestartCount == 1
	})
	first.stop()
	gate := make(chan struct{})
	defer close(gate)
	second := startTestAgentWith(t, rt, dir, &fakeVolumes{root: dir + "/root", setupGate: gate})
	pod := second.pod(t, "survivor")
	if st := ctrStatus(pod, "app"); pod.Status.Phase != v1.PodRunning || st.State.Running == nil || st.RestartCount != 1 {
		t.Errorf("right after recovery: phase %s, app %+v; want Running, the app running with 1 restart", pod.Status.Phase, st)
	}
}

func TestSidecarStopsAfterTheAppUnderRestartPolicyNever(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  restartPolicy: Never
  initContainers:
  - {name: helper, image: busybox, imagePullPolicy: IfNotPresent, restartPolicy: Always, command: [sleep, "1000"]}
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	waitFor(t, "job runs", func() bool { return a.pod(t, "job").Status.Phase == v1.PodRunning })
	if err := rt.Exit("app", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job succeeded", func() bool { return a.pod(t, "job").Status.Phase == v1.PodSucceeded })
	calls := rt.Calls()
	if i, j := indexOf(calls, "start helper"), indexOf(calls, "start app"); i < 0 || j < i {
		t.Errorf("calls %v: want the sidecar started before the app", calls)
	}
	if indexOf(calls, "stop helper") < 0 {
		t.Errorf("calls %v: the sidecar was not stopped after the app completed", calls)
	}
}

func TestImagePullPolicies(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers:
  - {name: app, image: absent, imagePullPolicy: Never, command: [sleep, "1000"]}
---
apiVersion: v1
kind: Pod
metadata: {name: always}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: Always, command: [sleep, "1000"]}
`)
	waitFor(t, "never waits in ErrImageNeverPull", func() bool {
		w := ctrStatus(a.pod(t, "never"), "app").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	waitFor(t, "always runs", func() bool { return a.pod(t, "always").Status.Phase == v1.PodRunning })
	if !slices.Contains(rt.Calls(), "pull busybox") {
		t.Errorf("pull policy Always did not pull: %v", rt.Calls())
	}
	if slices.Contains(rt.Calls(), "pull absent") {
		t.Errorf("pull policy Never pulled")
	}
}

func TestFailedPullsBackOffThenRecover(t *testing.T) {
	rt := criclienttest.New()
	rt.SetPullError(errors.New("registry unreachable"))
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: remote}
spec:
  containers:
  - {name: app, image: remote, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	reasons := map[string]bool{}
	waitFor(t, "ErrImagePull then ImagePullBackOff", func() bool {
		if w := ctrStatus(a.pod(t, "remote"), "app").State.Waiting; w != nil {
			reasons[w.Reason] = true
		}
		return reasons["ErrImagePull"] && reasons["ImagePullBackOff"]
	})
	rt.SetPullError(nil)
	waitFor(t, "remote runs once the registry answers", func() bool { return ctrStatus(a.pod(t, "remote"), "app").State.Running != nil })
}

// configMapReader is a ConfigMap (k: one) and a pod "reader" that mounts it.
const configMapReader = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {k: one}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  volumes: [{name: cfg, configMap: {name: cfg}}]
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"], volumeMounts: [{name: cfg, mountPath: /cfg}]}
`

func TestChangedConfigMapReachesTheVolumesInPlace(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	manifest := configMapReader
	uid := a.apply(t, manifest).Pods()[0].UID
	waitFor(t, "reader runs", func() bool { return a.pod(t, "reader").Status.Phase == v1.PodRunning })
	resp := a.apply(t, strings.Replace(manifest, "k: one", "k: two", 1))
	if got := resp.Objects[0].Outcome + " " + resp.Objects[1].Outcome; got != "configured unchanged" {
		t.Errorf("apply of a changed ConfigMap: %q; want the ConfigMap configured, the pod unchanged", got)
	}
	waitFor(t, "the volumes set up with the new data", func() bool {
		cms := a.volumes.setUpWith(uid).ConfigMaps
		return len(cms) == 1 && cms[0].Data["k"] == "two"
	})
	if st := ctrStatus(a.pod(t, "reader"), "app"); st.RestartCount != 0 || st.State.Running == nil {
		t.Errorf("the container was restarted by a ConfigMap change: %+v", st)
	}
}
