package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// pulledPod is a pod (name, image) that pulls its image if not present.
const pulledPod = `
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %s, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

// `berth run -f` of a pod whose image is not there yet shows the pull
// (plain lines, not a terminal): on berth its layers and bytes, on
// containerd, which reports none, when it began and ended with the image's
// size. The status lines follow as usual.
func TestRunShowsImagePullProgress(t *testing.T) {
	onEachRuntime(t, runShowsImagePullProgress)
}

func runShowsImagePullProgress(t *testing.T, n *node) {
	reg := registry.StartT(t, registry.Options{})
	pushed, err := reg.PushImage("e2e/pulled:v1", testimage.Options{Layers: 2})
	if err != nil {
		t.Fatal(err)
	}
	n.rt.plainHTTPRegistry(t, reg.Host)
	out := runAndDetach(t, n, n.write("pulled.yaml", fmt.Sprintf(pulledPod, "pulled", pushed.Ref)))
	t.Logf("berth run:\n%s", out)
	want := []string{"pulling " + pushed.Ref, "Running", "the pods are up"}
	summary := regexp.MustCompile(`(?m)^pulled ` + regexp.QuoteMeta(pushed.Ref) + `: 2 layers, [0-9.]+[kM]?B in [0-9.]+s \([0-9.]+[kMG]?B/s\)$`)
	if n.rt.name() == "containerd" {
		summary = regexp.MustCompile(`(?m)^pulled ` + regexp.QuoteMeta(pushed.Ref) + ` in [0-9.]+s \([0-9.]+[kM]?B\)$`)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("berth run output lacks %q:\n%s", w, out)
		}
	}
	if !summary.MatchString(out) {
		t.Errorf("berth run output lacks the pull's summary (%s):\n%s", summary, out)
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("berth run wrote escapes to a pipe:\n%q", out)
	}
	if n.rt.name() == "berth" {
		for _, layer := range pushed.Layers {
			if !strings.Contains(out, strings.TrimPrefix(layer, "sha256:")[:12]+": done, ") {
				t.Errorf("berth run output lacks layer %s done:\n%s", layer, out)
			}
		}
	}

	// Run again: the image is present, so no pull is shown.
	n.deleteAndCheckGone("pulled")
	again := runAndDetach(t, n, n.write("again.yaml", fmt.Sprintf(pulledPod, "again", pushed.Ref)))
	if strings.Contains(again, "pull") {
		t.Errorf("a run with the image present showed a pull:\n%s", again)
	}
	n.deleteAndCheckGone("again")
}

// runAndDetach runs `berth run -f path` with stdout and stderr on one
// pipe until the pods are up, detaches (Ctrl-C) and returns the output.
func runAndDetach(t *testing.T, n *node, path string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := n.berthCmd("run", "-f", path)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { // when readUntil failed: our own child
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	seen := readUntil(t, r, "the pods are up", 90*time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT) // our own child
	if err := cmd.Wait(); err != nil {
		t.Errorf("berth run after Ctrl-C: %v; want exit 0 (detached)", err)
	}
	return seen
}
