package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/test/harness"
)

const subPathPod = `
apiVersion: v1
kind: ConfigMap
metadata: {name: subcfg}
data: {greeting: hello}
---
apiVersion: v1
kind: Pod
metadata: {name: subpaths}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: cm, configMap: {name: subcfg}}
  - {name: host, hostPath: {path: HOSTDIR, type: Directory}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo run >> /made/runs; [ $(wc -l < /made/runs) -ge 2 ] || exit 1; exec sleep 3600"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: shared, mountPath: /made, subPath: new/dirs}
    - {name: cm, mountPath: /etc/greeting, subPath: greeting}
    - {name: host, mountPath: /linked, subPath: inside-link}
---
apiVersion: v1
kind: Pod
metadata: {name: escaper}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: host, hostPath: {path: HOSTDIR, type: Directory}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts:
    - {name: host, mountPath: /escaped, subPath: escape-link}
`

// subPath mounts of a directory to be made, of a ConfigMap key (a file)
// and through a symlink that stays in its volume, across a container
// restart; a symlink leading out of the volume is refused. Each subPath is
// one mount under the pod's volume-subpaths directory, and deleting the
// pod leaves none (the harness checks for leftover mounts).
func TestSubPathMounts(t *testing.T) { onEachRuntime(t, subPathMounts) }

func subPathMounts(t *testing.T, n *node) {
	hostDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hostDir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "real", "marker"), []byte("in-volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"inside-link": "real", "escape-link": "/etc"} {
		if err := os.Symlink(target, filepath.Join(hostDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	n.apply("subpaths.yaml", strings.ReplaceAll(subPathPod, "HOSTDIR", hostDir))
	pod := n.waitPod("subpaths", "running after one restart", func(p v1.Pod) bool {
		st := containerStatus(p, "app")
		return st.RestartCount == 1 && st.State.Running != nil
	})
	checks := map[string]string{
		"cat /etc/greeting":         "hello",
		"cat /linked/marker":        "in-volume",
		"cat /shared/new/dirs/runs": "run\nrun",
	}
	for cmd, want := range checks {
		out, err := n.exec("subpaths", "app", "sh", "-c", cmd)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("%s: %q, %v; want %q", cmd, out, err, want)
		}
	}
	subpaths := filepath.Join(n.rt.agentRoot(), "agent", "pods", string(pod.UID), "volume-subpaths")
	if mounts := harness.MountsUnder(subpaths); len(mounts) != 3 {
		t.Errorf("mounts under %s after a restart: %v; want one per subPath (3)", subpaths, mounts)
	}

	escaper := n.waitPod("escaper", "refused its subPath", func(p v1.Pod) bool {
		w := containerStatus(p, "app").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if msg := containerStatus(escaper, "app").State.Waiting.Message; !strings.Contains(msg, "outside the volume") {
		t.Errorf("escaper waiting message %q; want it to say the subPath leads outside the volume", msg)
	}
}
