package containerd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// appManifest is a ConfigMap and a pod that uses kubelet features the
// agent implements on its side of CRI: an init container writing into an
// emptyDir, $(VAR) expansion, a configMap volume and a subPath of it (a
// bind mount the agent makes on the host), an exec readiness probe
// (which passes once the test has created /work/ready with berth exec).
const appManifest = `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data:
  greeting: hello from the configmap
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: work, emptyDir: {}}
  - {name: config, configMap: {name: app-config}}
  initContainers:
  - name: prepare
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo init-ran; echo prepared-by-init > /work/state"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    env:
    - {name: WHO, value: world}
    - {name: GREETING, value: "hello $(WHO)"}
    command: [sh, -c, 'cat /work/state; echo "greeting=$GREETING"; cat /config/greeting; echo; exec sleep 3600']
    volumeMounts:
    - {name: work, mountPath: /work}
    - {name: config, mountPath: /config, readOnly: true}
    - {name: config, mountPath: /etc/greeting, subPath: greeting, readOnly: true}
    readinessProbe:
      exec: {command: [cat, /work/ready]}
      periodSeconds: 1
`

// crasherManifest is a pod whose only container exits 1 at once.
const crasherManifest = `
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo crashing; exit 1"]
`

// appLog is what the app's main container prints.
const appLog = "prepared-by-init\ngreeting=hello world\nhello from the configmap\n"

// The agent runs unchanged against containerd 1.6: the pods behave as
// under the kubelet, berth's CLI reads their logs and execs into them,
// deletion leaves nothing behind, and a restarted agent adopts the running
// pod from containerd's labels without recreating anything.
func TestAgentOnContainerd(t *testing.T) {
	if reason := skipReason(); reason != "" {
		t.Skip(reason)
	}
	start := time.Now()
	e := newEnv(t)
	e.setup()
	t.Logf("containerd and the agent are up after %v (network %s, %s)", time.Since(start).Round(time.Millisecond), e.net.Bridge, e.net.Subnet)
	e.apply(t, "app.yaml", appManifest)
	e.apply(t, "crasher.yaml", crasherManifest)
	steps := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"InitContainerVolumesEnvAndProbe", checkApp},
		{"LogsAndExec", checkLogsAndExec},
		{"CrashLoopBackOff", checkCrashLoop},
		{"DeleteRemovesEverything", checkDeleteCrasher},
		{"AgentRestartAdoptsRunningPod", checkAgentRestart},
		{"DeleteAfterRestart", checkDeleteApp},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, e) }) {
			return // later steps build on this one
		}
	}
	t.Logf("scenario done after %v", time.Since(start).Round(time.Millisecond))
}

// checkApp: the init container ran to completion before main, readiness
// follows the exec probe, and the status matches what containerd runs.
func checkApp(t *testing.T, e *env) {
	pod := e.waitPod(t, "app", "main running", func(p v1.Pod) bool {
		st, _ := containerStatus(p, "main")
		return p.Status.Phase == v1.PodRunning && st.State.Running != nil
	})
	if condition(pod, v1.PodReady) == v1.ConditionTrue {
		t.Errorf("the pod is ready before its readiness probe can pass: %+v", pod.Status.Conditions)
	}
	e.mustBerth(t, "exec", "app", "-c", "main", "--", "touch", "/work/ready")
	pod = e.waitPod(t, "app", "ready once the probe passes", func(p v1.Pod) bool {
		return condition(p, v1.PodReady) == v1.ConditionTrue
	})
	for _, c := range []v1.PodConditionType{v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		if got := condition(pod, c); got != v1.ConditionTrue {
			t.Errorf("condition %s = %q; want True", c, got)
		}
	}
	if prep, _ := containerStatus(pod, "prepare"); prep.State.Terminated == nil ||
		prep.State.Terminated.ExitCode != 0 || prep.State.Terminated.Reason != "Completed" {
		t.Errorf("init container prepare: state %+v; want terminated, Completed, exit 0", prep.State)
	}
	app, _ := containerStatus(pod, "main")
	if app.State.Running == nil || !app.Ready || app.Started == nil || !*app.Started || app.RestartCount != 0 {
		t.Errorf("main: %+v; want running, started, ready, no restarts", app)
	}
	if app.ImageID == "" || app.Image == "" {
		t.Errorf("main: image %q, imageID %q; want both set", app.Image, app.ImageID)
	}
	if ip := pod.Status.PodIP; !e.net.Mentions(" " + ip) {
		t.Errorf("pod IP %q; want an address of the test subnet %s", ip, e.net.Subnet)
	}
	if !strings.HasPrefix(app.ContainerID, "containerd://") {
		t.Errorf("main: containerID %q; want the runtime's name as its scheme, containerd://", app.ContainerID)
	}
	st := e.criContainer(t, rawID(app.ContainerID))
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetMetadata().GetName() != "main" {
		t.Errorf("containerd's container %s: state %v, name %q; want the running main", app.ContainerID, st.GetState(), st.GetMetadata().GetName())
	}
	if table := e.mustBerth(t, "get", "pods"); !strings.Contains(table, "app") || !strings.Contains(table, "1/1") || !strings.Contains(table, "Running") {
		t.Errorf("berth get pods:\n%s\nwant app 1/1 Running", table)
	}
}

// checkLogsAndExec: berth logs reads containerd's CRI log files (main's
// output shows the init container's file, $(VAR) expansion and the
// configMap), berth exec runs through containerd's streaming server and
// passes the command's exit code on; the subPath mount shows the key.
func checkLogsAndExec(t *testing.T, e *env) {
	if got := e.mustBerth(t, "logs", "app"); got != appLog {
		t.Errorf("berth logs app = %q; want %q", got, appLog)
	}
	if got := e.mustBerth(t, "logs", "app", "-c", "prepare"); got != "init-ran\n" {
		t.Errorf("berth logs app -c prepare = %q; want %q", got, "init-ran\n")
	}
	got := e.mustBerth(t, "exec", "app", "-c", "main", "--", "sh", "-c", `echo "$GREETING"; cat /config/greeting; echo; cat /etc/greeting; echo; cat /work/state; hostname`)
	if want := "hello world\nhello from the configmap\nhello from the configmap\nprepared-by-init\napp\n"; got != want {
		t.Errorf("berth exec output %q; want %q", got, want)
	}
	_, _, err := e.berth("exec", "app", "--", "sh", "-c", "exit 3")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("berth exec of `exit 3`: %v; want exit code 3", err)
	}
}

// checkCrashLoop: a container that keeps exiting 1 is restarted with
// back-off (CrashLoopBackOff while waiting), its last termination kept.
func checkCrashLoop(t *testing.T, e *env) {
	sawBackOff := false
	pod := e.waitPod(t, "crasher", "restarted at least twice", func(p v1.Pod) bool {
		st, _ := containerStatus(p, "crash")
		if w := st.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		return st.RestartCount >= 2 && sawBackOff
	})
	st, _ := containerStatus(pod, "crash")
	if last := st.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || last.Reason != "Error" {
		t.Errorf("lastState %+v; want terminated with exit 1, reason Error", st.LastTerminationState)
	}
	if pod.Status.Phase != v1.PodRunning || condition(pod, v1.PodReady) == v1.ConditionTrue {
		t.Errorf("phase %s, Ready %s; want Running and not ready", pod.Status.Phase, condition(pod, v1.PodReady))
	}
	if got := e.mustBerth(t, "logs", "crasher", "--previous"); got != "crashing\n" {
		t.Errorf("berth logs --previous = %q; want %q", got, "crashing\n")
	}
}

// checkDeleteCrasher deletes the crashing pod; its IP goes back too.
func checkDeleteCrasher(t *testing.T, e *env) {
	e.deleteAndCheckGone(t, "crasher")
	if allocs := e.net.Allocations(); len(allocs) != 1 {
		t.Errorf("host-local holds %d addresses (%v); want 1, the app's", len(allocs), allocs)
	}
}

// checkDeleteApp deletes the adopted pod: containerd is then empty and
// nothing is left on the machine while both daemons still run.
func checkDeleteApp(t *testing.T, e *env) {
	e.deleteAndCheckGone(t, "app")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sandboxes, containers, err := e.ctrd.listAll(ctx)
	if err != nil || len(sandboxes) != 0 || len(containers) != 0 {
		t.Errorf("containerd holds %d sandboxes and %d containers (error %v); want none", len(sandboxes), len(containers), err)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("with the agent and containerd still running, left behind:\n%s", strings.Join(left, "\n"))
	}
}

// deleteAndCheckGone deletes a pod with `berth delete pod` and checks that
// the agent no longer lists it and that containerd, the pod's log and
// volume directories and its cgroup are rid of it.
func (e *env) deleteAndCheckGone(t *testing.T, name string) {
	pods, err := e.listPods()
	if err != nil {
		t.Fatal(err)
	}
	pod, ok := findPod(pods, name)
	if !ok {
		t.Fatalf("pod %s is not listed before the delete", name)
	}
	uid := string(pod.UID)
	e.recordRuntime(t)
	if out := e.mustBerth(t, "delete", "pod", name); !strings.Contains(out, `pod "`+name+`" deleted`) {
		t.Errorf("berth delete pod %s printed %q", name, out)
	}
	if pods, err := e.listPods(); err != nil {
		t.Error(err)
	} else if _, still := findPod(pods, name); still {
		t.Errorf("berth get pods still lists %s after the delete returned", name)
	}
	sandboxes, containers := e.criObjectsOfPod(t, uid)
	if len(sandboxes)+len(containers) > 0 {
		t.Errorf("containerd still holds %d sandboxes and %d containers of pod %s", len(sandboxes), len(containers), name)
	}
	dirs := []string{
		filepath.Join(e.podLogDir, "default_"+name+"_"+uid),
		filepath.Join(e.berthRoot(), "agent", "pods", uid),
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (stat: %v)", dir, err)
		}
	}
	for _, c := range e.cgroupsLeft() {
		if strings.Contains(c, "pod"+uid) {
			t.Errorf("cgroup %s is left", c)
		}
	}
}
