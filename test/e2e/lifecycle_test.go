package e2e

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// appManifest is a ConfigMap and a pod with an init container writing
// into an emptyDir, $(VAR) expansion, a configMap volume and a subPath of
// it (a bind mount the agent makes on the host).
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
`

// appLog is what the app's main container prints.
const appLog = "prepared-by-init\ngreeting=hello world\nhello from the configmap\n"

// berth logs reads each container's CRI log file (the init container's
// too); berth exec runs through the runtime's streaming server with the
// pod's env, volumes, subPath and host name, and passes the command's exit
// code on; the pod's IP is on the runtime's network.
func TestLogsAndExec(t *testing.T) { onEachRuntime(t, logsAndExec) }

func logsAndExec(t *testing.T, n *node) {
	n.apply("app.yaml", appManifest)
	pod := n.waitPod("app", "main running", running("main"))
	n.waitPod("app", "main wrote its log", func(v1.Pod) bool { return n.must("logs", "app") == appLog })
	if got := n.must("logs", "app", "-c", "prepare"); got != "init-ran\n" {
		t.Errorf("berth logs app -c prepare = %q; want %q", got, "init-ran\n")
	}
	got, err := n.exec("app", "main", "sh", "-c", `echo "$GREETING"; cat /config/greeting; echo; cat /etc/greeting; echo; cat /work/state; hostname`)
	if want := "hello world\nhello from the configmap\nhello from the configmap\nprepared-by-init\napp\n"; err != nil || got != want {
		t.Errorf("berth exec: %q, %v; want %q", got, err, want)
	}
	_, _, err = n.berth("exec", "app", "--", "sh", "-c", "exit 3")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("berth exec of `exit 3`: %v; want exit code 3", err)
	}
	if ip, network := pod.Status.PodIP, n.rt.net(); !network.Mentions(" " + ip) {
		t.Errorf("pod IP %q; want an address of the test subnet %s", ip, network.Subnet)
	}
	id := rawID(containerStatus(pod, "main").ContainerID)
	st, err := n.rt.cri().ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStatus().GetMetadata().GetName() != "main" {
		t.Errorf("the runtime's container %s: %v, %v; want the running main", id, st.GetStatus(), err)
	}
}

// crasherManifest is a pod whose only container exits 1 at once.
const crasherManifest = `
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: crash, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, "echo crashing; exit 1"]}
`

// `berth delete pod` returns once the pod is gone: the agent no longer
// lists it, and the runtime, the pod's log and volume directories, its
// cgroup and its IP are rid of it, while the other pod runs on.
func TestDeleteReleasesThePod(t *testing.T) { onEachRuntime(t, deleteReleasesThePod) }

func deleteReleasesThePod(t *testing.T, n *node) {
	n.apply("app.yaml", appManifest)
	n.apply("crasher.yaml", crasherManifest)
	n.waitPod("app", "main running", running("main"))
	n.waitPod("crasher", "restarted", func(p v1.Pod) bool { return containerStatus(p, "crash").RestartCount >= 1 })
	n.deleteAndCheckGone("crasher")
	if allocs := n.rt.net().Allocations(); len(allocs) != 1 {
		t.Errorf("host-local holds %d addresses (%v); want 1, the app's", len(allocs), allocs)
	}
	n.deleteAndCheckGone("app")
	sandboxes, containers := n.criObjects(nil)
	if len(sandboxes)+len(containers) > 0 {
		t.Errorf("the runtime holds %d sandboxes and %d containers; want none", len(sandboxes), len(containers))
	}
}

// deleteAndCheckGone deletes a pod with `berth delete pod` and checks
// that, once the command returns, the agent no longer lists it and that
// the runtime, the pod's log and volume directories and its cgroup are rid
// of it.
func (n *node) deleteAndCheckGone(name string) {
	t := n.t
	t.Helper()
	uid := string(n.pod(name).UID)
	if out := n.must("delete", "pod", name); !strings.Contains(out, `pod "`+name+`" deleted`) {
		t.Errorf("berth delete pod %s printed %q", name, out)
	}
	for _, p := range n.podList() {
		if p.Name == name {
			t.Errorf("berth get pods still lists %s after the delete returned", name)
		}
	}
	if sandboxes, containers := n.criObjects(map[string]string{"io.kubernetes.pod.uid": uid}); len(sandboxes)+len(containers) > 0 {
		t.Errorf("the runtime still holds %d sandboxes and %d containers of pod %s", len(sandboxes), len(containers), name)
	}
	for _, dir := range []string{filepath.Join(n.logDir, "default_"+name+"_"+uid), filepath.Join(n.rt.agentRoot(), "agent", "pods", uid)} {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists (stat: %v)", dir, err)
		}
	}
	if left := harness.BerthCgroups(func(c string) bool { return c == "pod"+uid }); len(left) > 0 {
		t.Errorf("cgroups of pod %s left: %v", name, left)
	}
}

// criObjects lists the runtime's sandboxes and containers with labels
// (all of them for nil) and remembers their ids for the leftover checks.
func (n *node) criObjects(labels map[string]string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := n.rt.cri().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: labels}})
	if err != nil {
		n.t.Fatalf("list sandboxes: %v", err)
	}
	ctrs, err := n.rt.cri().ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: labels}})
	if err != nil {
		n.t.Fatalf("list containers: %v", err)
	}
	ids, _ := n.rt.known()
	for _, sb := range sbs.GetItems() {
		ids[sb.GetId()] = true
	}
	for _, c := range ctrs.GetContainers() {
		ids[c.GetId()] = true
	}
	return sbs.GetItems(), ctrs.GetContainers()
}

// SIGTERM stops the agent (berth serve with it) and leaves the pods
// running; the next agent adopts them as they are: same uid, sandbox and
// containers, the init container's completed instance, no restart, and
// nothing created twice a few relists later.
func TestAgentStopAdoptsRunningPods(t *testing.T) { onEachRuntime(t, agentStopAdoptsRunningPods) }

func agentStopAdoptsRunningPods(t *testing.T, n *node) {
	n.apply("app.yaml", appManifest)
	before := n.waitPod("app", "main running", running("main"))
	uid := map[string]string{"io.kubernetes.pod.uid": string(before.UID)}
	sandboxesBefore, containersBefore := n.criObjects(uid)

	n.rt.stopAgent()
	n.startAgent()
	after := n.waitPod("app", "main running under the new agent", running("main"))
	mainBefore, mainAfter := containerStatus(before, "main"), containerStatus(after, "main")
	if after.UID != before.UID || mainAfter.ContainerID != mainBefore.ContainerID || mainAfter.RestartCount != 0 {
		t.Errorf("after the restart: uid %s, main %s, restarts %d; want %s, %s, 0",
			after.UID, mainAfter.ContainerID, mainAfter.RestartCount, before.UID, mainBefore.ContainerID)
	}
	initBefore, initAfter := containerStatus(before, "prepare"), containerStatus(after, "prepare")
	if initAfter.ContainerID != initBefore.ContainerID || initAfter.State.Terminated == nil {
		t.Errorf("init container after the restart: %+v; want the same completed instance %s", initAfter, initBefore.ContainerID)
	}
	time.Sleep(3 * time.Second) // three relists: the agent must create nothing
	sandboxesAfter, containersAfter := n.criObjects(uid)
	if got, want := criIDs(sandboxesAfter), criIDs(sandboxesBefore); !slices.Equal(got, want) || len(got) != 1 {
		t.Errorf("sandboxes of the pod after the restart %v; want the one from before, %v", got, want)
	}
	if got, want := criIDs(containersAfter), criIDs(containersBefore); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("containers of the pod after the restart %v; want the two from before, %v", got, want)
	}
	if got := n.must("logs", "app"); got != appLog {
		t.Errorf("berth logs app after the restart = %q; want %q", got, appLog)
	}
}

// criIDs are the sorted ids of sandboxes or containers.
func criIDs[T interface{ GetId() string }](items []T) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.GetId())
	}
	slices.Sort(ids)
	return ids
}

// rawID drops the "<runtime>://" prefix of a status container id.
func rawID(id string) string {
	if _, raw, ok := strings.Cut(id, "://"); ok {
		return raw
	}
	return id
}
