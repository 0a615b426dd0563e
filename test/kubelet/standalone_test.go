package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/kube"
)

// webPod has an init container that leaves a file in an emptyDir and two
// containers; the first exits (and would be restarted) unless the init
// container ran before it.
const webPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: work
    emptyDir: {}
  initContainers:
  - name: init
    image: busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "echo ready > /work/ready"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: a
    image: busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "test -f /work/ready && exec sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: b
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`

// crashPod's only container exits at once; kubelet restarts it with back-off.
const crashPod = `apiVersion: v1
kind: Pod
metadata:
  name: crash
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "echo crashing; exit 3"]
`

// TestStandaloneKubelet drives berth serve with an upstream kubelet that
// reads static pods from a directory.
func TestStandaloneKubelet(t *testing.T) {
	k := kube.NewKubelet(t, kube.KubeletOptions{Bin: os.Getenv("BERTH_KUBELET")}) // set: TestMain checked
	d := harness.Start(t, harness.Options{
		BinDir: binDir, Config: offlineConfig, Layouts: []string{busyboxLayout},
		ServeArgs: []string{"--agent=false"},
	})
	k.Start(d.Socket)
	c := cri{k: k, d: d}

	k.WriteManifest("web.yaml", webPod)
	k.WriteManifest("crash.yaml", crashPod)
	web := "web-" + k.NodeName
	k.WaitFor("web's init container to exit 0 and a, b to run", 2*time.Minute, func() bool {
		return c.state(web, "init") == exited0 && c.state(web, "a") == running && c.state(web, "b") == running
	})
	if n := c.attempts(web, "a"); n != 1 {
		t.Errorf("container a of %s was created %d times, want once (did it run before the init container?)", web, n)
	}
	t.Logf("%s: init exited 0, a and b run", web)
	crash := "crash-" + k.NodeName
	k.WaitFor("kubelet to restart crash twice", 3*time.Minute, func() bool { return c.maxAttempt(crash, "crash") >= 2 })
	t.Logf("crash restarted %d times", c.maxAttempt(crash, "crash"))
	c.restartKubelet(web, crash)
	uids := c.podUIDs()

	for _, f := range []string{"web.yaml", "crash.yaml"} {
		if err := os.Remove(filepath.Join(k.Manifests, f)); err != nil {
			t.Fatal(err)
		}
	}
	k.WaitFor("kubelet to remove every sandbox and container from berth", 3*time.Minute, c.empty)
	k.WaitFor("kubelet to remove the pod cgroups", time.Minute, func() bool { return len(podCgroups(uids)) == 0 })
	t.Logf("kubelet removed both pods and their cgroups")
}

// restartKubelet stops kubelet and starts it again: it must adopt the pods
// berth runs (same sandbox, containers not recreated) and go on restarting
// the crashing one.
func (c cri) restartKubelet(web, crash string) {
	t := c.k.T
	sandbox := c.sandboxID(web)
	c.k.Terminate()
	before := c.maxAttempt(crash, "crash")
	c.k.Start(c.d.Socket)
	c.k.WaitFor("the restarted kubelet to restart crash", 2*time.Minute, func() bool {
		return c.maxAttempt(crash, "crash") > before
	})
	if id := c.sandboxID(web); id != sandbox {
		t.Errorf("after kubelet's restart %s runs in sandbox %q, want %q", web, id, sandbox)
	}
	for _, name := range []string{"a", "b"} {
		if n, st := c.attempts(web, name), c.state(web, name); n != 1 || st != running {
			t.Errorf("after kubelet's restart container %s of %s: %d attempts, state %d; want 1, running", name, web, n, st)
		}
	}
	t.Logf("restarted kubelet adopted %s and restarted crash (attempt %d)", web, c.maxAttempt(crash, "crash"))
}

// sandboxID is the id of the ready sandbox of the pod named pod, or "".
func (c cri) sandboxID(pod string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod},
	}})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	if len(resp.GetItems()) != 1 {
		return fmt.Sprintf("(%d ready sandboxes)", len(resp.GetItems()))
	}
	return resp.GetItems()[0].GetId()
}

// podCgroups lists the cgroups of the pods with these uids that exist in
// any hierarchy, at any QoS level.
func podCgroups(uids []string) []string {
	var out []string
	for _, uid := range uids {
		for _, pattern := range []string{"/sys/fs/cgroup/*/kubepods/pod", "/sys/fs/cgroup/*/kubepods/*/pod"} {
			found, _ := filepath.Glob(pattern + uid)
			out = append(out, found...)
		}
	}
	return out
}

// cri looks at berth through the harness's CRI client.
type cri struct {
	k *kube.Kubelet
	d *harness.Daemon
}

type ctrState int

const (
	absent ctrState = iota
	created
	running
	exited0
	exitedNonZero
)

// containers lists the containers named name in the pod named pod (every
// attempt, newest last is not guaranteed).
func (c cri) containers(pod, name string) []*runtimeapi.Container {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": name},
	}})
	if err != nil {
		c.k.T.Fatalf("ListContainers: %v", err)
	}
	return resp.GetContainers()
}

// state is the state of the newest attempt of a container.
func (c cri) state(pod, name string) ctrState {
	var newest *runtimeapi.Container
	for _, ctr := range c.containers(pod, name) {
		if newest == nil || ctr.GetMetadata().GetAttempt() > newest.GetMetadata().GetAttempt() {
			newest = ctr
		}
	}
	if newest == nil {
		return absent
	}
	switch newest.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return c.exitState(newest.GetId())
	}
	return created
}

func (c cri) exitState(id string) ctrState {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.d.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return absent // removed meanwhile
	}
	if st.GetStatus().GetExitCode() == 0 {
		return exited0
	}
	return exitedNonZero
}

func (c cri) attempts(pod, name string) int { return len(c.containers(pod, name)) }

// maxAttempt is the highest attempt (kubelet's restart count) of a
// container; kubelet may have removed older ones.
func (c cri) maxAttempt(pod, name string) uint32 {
	var n uint32
	for _, ctr := range c.containers(pod, name) {
		n = max(n, ctr.GetMetadata().GetAttempt())
	}
	return n
}

// podUIDs lists the uids of the sandboxes berth holds.
func (c cri) podUIDs() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	var uids []string
	for _, sb := range resp.GetItems() {
		uids = append(uids, sb.GetMetadata().GetUid())
		c.d.KnownPodUIDs[sb.GetMetadata().GetUid()] = true
	}
	return uids
}

// empty reports whether berth lists no sandbox and no container.
func (c cri) empty() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := c.d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.k.T.Fatalf("ListPodSandbox: %v", err)
	}
	ctrs, err := c.d.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		c.k.T.Fatalf("ListContainers: %v", err)
	}
	return len(sbs.GetItems()) == 0 && len(ctrs.GetContainers()) == 0
}
