package e2e

import (
	"strings"
	"syscall"
	"testing"
)

// rroPod mounts HOSTDIR, which holds a tmpfs at sub/, read-only with
// recursiveReadOnly IfPossible, under the runtime handler CLASS.
const rroPod = `apiVersion: v1
kind: Pod
metadata: {name: rro}
spec:
  runtimeClassName: CLASS
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    volumeMounts:
    - {name: host, mountPath: /host, readOnly: true, recursiveReadOnly: IfPossible}
  volumes:
  - name: host
    hostPath: {path: HOSTDIR}
`

// TestRuntimeClassAndRecursiveReadOnly: a pod's runtimeClassName is the
// sandbox's runtime handler, and recursiveReadOnly IfPossible makes the
// mounts below a read-only volume read-only where the handler's runtime
// says it can (berth's pinned runc; containerd 1.6 reports no handler
// features, so there the submount stays writable, as kubelet would leave
// it). On berth the system's runc is a second handler, runc-system.
func TestRuntimeClassAndRecursiveReadOnly(t *testing.T) {
	onEachRuntime(t, func(t *testing.T, n *node) {
		hostDir := t.TempDir()
		sub := hostDir + "/sub"
		if err := syscall.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
		manifest := strings.NewReplacer("HOSTDIR", hostDir, "CLASS", "runc").Replace(rroPod)
		n.apply("rro.yaml", manifest)
		n.waitPod("rro", "running", running("app"))
		if out, err := n.exec("rro", "app", "touch", "/host/top"); err == nil {
			t.Errorf("the read-only volume is writable: %q", out)
		}
		_, err := n.exec("rro", "app", "touch", "/host/sub/x")
		if recursive := n.rt.name() == "berth"; recursive != (err != nil) {
			t.Errorf("%s: writing below the read-only volume: %v; want it refused %v", n.rt.name(), err, recursive)
		}
		n.deleteAndCheckGone("rro")
		if n.rt.name() != "berth" {
			return
		}
		n.apply("rro.yaml", strings.NewReplacer("HOSTDIR", hostDir, "CLASS", "runc-system").Replace(rroPod))
		n.waitPod("rro", "running under runc-system", running("app"))
		if out, err := n.exec("rro", "app", "cat", "/proc/self/cgroup"); err != nil {
			t.Errorf("exec under runc-system: %q, %v", out, err)
		}
		n.deleteAndCheckGone("rro")
	})
}
