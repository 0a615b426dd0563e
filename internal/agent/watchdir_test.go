package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

func staticPodYAML(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers: [{name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, '1000']}]\n"
}

// manifestDir is a fresh directory, mode 0755, with the given pods.
func manifestDir(t *testing.T, pods ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range pods {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(staticPodYAML(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (a *testAgent) watched() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sortedKeys(a.watches)
}

func TestWatchRefusesADirectoryOthersCanWrite(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	dir := manifestDir(t, "static")
	for _, mode := range []os.FileMode{0o777, 0o775} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir})
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("mode %04o: watch: %v; want a refusal", mode, err)
		}
	}
	if len(a.ListPods("").Items) != 0 || len(a.watched()) != 0 {
		t.Errorf("pods %d, watches %v after refusals", len(a.ListPods("").Items), a.watched())
	}
	// Through a symbolic link, the real path is watched.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: link}); err != nil {
		t.Fatalf("watch through a link: %v", err)
	}
	if got := a.watched(); len(got) != 1 || got[0] != dir {
		t.Errorf("watches %v, want [%s]", got, dir)
	}
}

// A restarted agent does not watch again a directory that others can now
// write; its pods keep running, and stopping the watch still deletes them.
func TestRecoveryRefusesAWatchedDirectoryOthersCanWrite(t *testing.T) {
	rt := criclienttest.New()
	first := startTestAgent(t, rt)
	dir := manifestDir(t, "static")
	if _, err := first.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "static runs", func() bool { return first.pod(t, "static").Status.Phase == v1.PodRunning })
	first.stop()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	second := startTestAgent(t, rt)
	waitFor(t, "static runs again", func() bool { return second.pod(t, "static").Status.Phase == v1.PodRunning })
	if got := second.watched(); len(got) != 0 {
		t.Errorf("watches %v after recovery; want none", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "dropped.yaml"), []byte(staticPodYAML("dropped")), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // would be seen by inotify within 100 ms
	if _, err := second.DescribePod("default", "dropped"); err == nil {
		t.Fatal("a pod dropped into the refused directory runs")
	}
	if resp, err := second.Unwatch(context.Background(), dir); err != nil || len(resp.Pods) != 1 {
		t.Errorf("unwatch: %v %+v; want static deleted", err, resp)
	}
	waitFor(t, "static gone", func() bool { return len(second.ListPods("").Items) == 0 })
}
