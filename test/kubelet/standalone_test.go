package kubelet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	d := harness.Start(t, daemonOptions())
	k.Start(d.Socket)
	c := cri{k: k, d: d}

	web, crash := c.runStaticPods()
	c.runUsernsPod()
	c.restartKubelet(web, crash)
	uids := c.podUIDs()
	c.removeStaticPods(func() []string { return podCgroups(uids) })
	t.Logf("kubelet removed both pods and their cgroups")
}

// daemonOptions run berth serve offline with busybox imported and no node
// agent (kubelet is the agent).
func daemonOptions() harness.Options {
	return harness.Options{
		BinDir: env.BinDir, Config: env.Config, Layouts: []string{env.Layout},
		ServeArgs: []string{"--agent=false"},
	}
}

// runStaticPods places web and crash and waits until web's init container
// ran (once) before a and b, and kubelet restarted crash twice; it returns
// the pods' names.
func (c cri) runStaticPods() (web, crash string) {
	k, t := c.k, c.k.T
	k.WriteManifest("web.yaml", webPod)
	k.WriteManifest("crash.yaml", crashPod)
	web, crash = "web-"+k.NodeName, "crash-"+k.NodeName
	k.WaitFor("web's init container to exit 0 and a, b to run", 2*time.Minute, func() bool {
		return c.state(web, "init") == exited0 && c.state(web, "a") == running && c.state(web, "b") == running
	})
	if n := c.attempts(web, "a"); n != 1 {
		t.Errorf("container a of %s was created %d times, want once (did it run before the init container?)", web, n)
	}
	t.Logf("%s: init exited 0, a and b run", web)
	k.WaitFor("kubelet to restart crash twice", 3*time.Minute, func() bool { return c.maxAttempt(crash, "crash") >= 2 })
	t.Logf("crash restarted %d times", c.maxAttempt(crash, "crash"))
	return web, crash
}

// removeStaticPods removes both manifests and waits until berth holds no
// sandbox and no container, and podCgroups lists none of the pods'
// cgroups (kubelet removes them once the pods are gone).
func (c cri) removeStaticPods(podCgroups func() []string) {
	for _, f := range []string{"web.yaml", "crash.yaml"} {
		if err := os.Remove(filepath.Join(c.k.Manifests, f)); err != nil {
			c.k.T.Fatal(err)
		}
	}
	c.k.WaitFor("kubelet to remove every sandbox and container from berth", 3*time.Minute, c.empty)
	c.k.WaitFor("kubelet to remove the pod cgroups", time.Minute, func() bool { return len(podCgroups()) == 0 })
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
