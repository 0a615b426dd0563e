package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func dirPod(name, value string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo $VALUE; exec sleep 3600"]
    env: [{name: VALUE, value: "` + value + `"}]
`
}

// `berth run -f DIR`: the agent watches the directory; files added,
// changed and removed add, replace and remove pods; `berth delete -f DIR`
// stops the watch and deletes the pods.
func TestManifestDirectoryIsWatched(t *testing.T) { onEachRuntime(t, manifestDirectoryIsWatched) }

func manifestDirectoryIsWatched(t *testing.T, n *node) {
	dir := t.TempDir()
	n.watched = append(n.watched, dir)
	writeFile(t, filepath.Join(dir, "a.yaml"), dirPod("a", "one"))
	if out := n.must("run", "-d", "-f", dir); !strings.Contains(out, "pod/a created") {
		t.Fatalf("run -d -f DIR: %q", out)
	}
	first := n.waitPod("a", "a runs", running("app"))

	writeFile(t, filepath.Join(dir, "b.yaml"), dirPod("b", "two"))
	n.waitPod("b", "b added by its new file", running("app"))

	writeFile(t, filepath.Join(dir, "a.yaml"), dirPod("a", "changed"))
	replaced := n.waitPod("a", "a replaced after its file changed", func(p v1.Pod) bool {
		return p.UID != first.UID && running("app")(p)
	})
	if logs := n.must("logs", "a"); logs != "changed\n" {
		t.Errorf("replaced pod a logs %q; want the new value", logs)
	}
	if _, errOut, err := n.berth("delete", "pod", "b"); err == nil || !strings.Contains(errOut, "watched directory") {
		t.Errorf("deleting a pod of a watched directory by name: err %v, %q; want a refusal naming the directory", err, errOut)
	}

	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n, "b")
	if p := n.pod("a"); p.UID != replaced.UID {
		t.Errorf("removing b's file touched a")
	}
	n.must("delete", "-f", dir)
	waitGone(t, n, "a")
	writeFile(t, filepath.Join(dir, "c.yaml"), dirPod("c", "three"))
	time.Sleep(1500 * time.Millisecond) // three rescans
	if list, _ := n.client.ListPods(context.Background(), ""); len(list.Items) != 0 {
		t.Errorf("the directory is still watched after delete -f: %d pods", len(list.Items))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitGone(t *testing.T, n *node, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := n.client.ListPods(context.Background(), "default")
		present := err != nil
		for _, p := range list.Items {
			present = present || p.Name == name
		}
		if !present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still listed after 30s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Whoever can write a watched directory runs pods as root: the agent
// watches only directories no one but root can change (berth run -f
// applies another one once, saying why it is not watched), refuses berth's
// own annotations in manifests (a pod's berth.dev/watch-dir used to make a
// restarted agent watch any directory), and after a restart does not
// watch again a directory that others can now write.
func TestWatchedDirectoryMustBeRootOnly(t *testing.T) {
	onEachRuntime(t, watchedDirectoryMustBeRootOnly)
}

func watchedDirectoryMustBeRootOnly(t *testing.T, n *node) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(open, "o.yaml"), dirPod("o", "one"))
	if _, errOut, err := n.berth("run", "-d", "-f", open); err != nil || !strings.Contains(errOut, "applied once, not watched") || !strings.Contains(errOut, "writable by group or others") {
		t.Errorf("run -f of a world-writable directory: %v, %q; want it applied once, saying why it is not watched", err, errOut)
	}
	n.waitPod("o", "o of the directory applied once runs", running("app"))
	writeFile(t, filepath.Join(open, "p.yaml"), dirPod("p", "two"))
	time.Sleep(1500 * time.Millisecond) // three rescans, were it watched
	if _, err := n.client.DescribePod(context.Background(), "default", "p"); err == nil {
		t.Error("a pod dropped into the directory applied once runs")
	}
	if err := os.Remove(filepath.Join(open, "p.yaml")); err != nil {
		t.Fatal(err)
	}
	n.must("delete", "-f", open)
	waitGone(t, n, "o")
	annotated := strings.Replace(dirPod("x", "one"), "metadata: {name: x}", "metadata: {name: x, annotations: {berth.dev/watch-dir: "+open+"}}", 1)
	if _, errOut, err := n.berth("apply", "-f", n.write("x.yaml", annotated)); err == nil ||
		!strings.Contains(errOut, "metadata.annotations[berth.dev/watch-dir]: Invalid value") {
		t.Errorf("apply of a pod with berth's annotation: %v, %q; want a refusal naming the field", err, errOut)
	}

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n.watched = append(n.watched, dir)
	writeFile(t, filepath.Join(dir, "a.yaml"), dirPod("a", "one"))
	n.must("run", "-d", "-f", dir)
	first := n.waitPod("a", "a runs", running("app"))
	n.rt.killAgent()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	n.startAgent()
	if p := n.waitPod("a", "a runs under the new agent", running("app")); p.UID != first.UID {
		t.Errorf("a was replaced: %s → %s", first.UID, p.UID)
	}
	writeFile(t, filepath.Join(dir, "b.yaml"), dirPod("b", "two"))
	time.Sleep(1500 * time.Millisecond) // three rescans
	if _, err := n.client.DescribePod(context.Background(), "default", "b"); err == nil {
		t.Error("a pod dropped into the refused directory runs")
	}
	if !strings.Contains(n.rt.logTail(200), "watched directory refused") {
		t.Error("the daemon's log does not say why the directory is not watched")
	}
	n.must("delete", "-f", dir)
	waitGone(t, n, "a")
}
