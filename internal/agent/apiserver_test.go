package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// serveAPI serves a's API on a socket in a temp dir and returns a client.
func serveAPI(t *testing.T, a *Agent) *agentapi.Client {
	t.Helper()
	socket := filepath.Join(t.TempDir(), agentapi.SocketName)
	srv, err := agentapi.ListenAPI(socket, a, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve() //nolint:errcheck // ends with Close
	t.Cleanup(srv.Close)
	info, err := os.Stat(socket)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, mode %v; want 0600", socket, err, info.Mode())
	}
	return agentapi.NewClient(socket)
}

// Until the agent has recovered its pods its API answers no read (an
// empty list would say that no pod runs), though it is reachable.
func TestAPIRefusesReadsWhileRecovering(t *testing.T) {
	a, err := New(Config{Runtime: criclienttest.New(), Images: criclienttest.New(), RootDir: t.TempDir(), PodLogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	client := serveAPI(t, a) // a does not Run: it never becomes ready
	ctx := context.Background()
	if _, err := client.ListPods(ctx, ""); err == nil || !strings.Contains(err.Error(), "recovering its pods") {
		t.Errorf("list before recovery: %v; want a refusal saying the agent is recovering", err)
	}
	if _, err := client.DescribePod(ctx, "default", "any"); err == nil || !strings.Contains(err.Error(), "recovering its pods") {
		t.Errorf("describe before recovery: %v; want the same refusal, not not-found", err)
	}
	if !client.Reachable(ctx) {
		t.Error("Reachable before recovery: false; want true (an agent answers: none is to be started)")
	}
}

func TestAPIAppliesListsDescribesAndDeletes(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	client := serveAPI(t, a.Agent)
	ctx := context.Background()
	resp, err := client.Apply(ctx, agentapi.ApplyRequest{Bundle: bundle(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"], env: [{name: K, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}]}
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap cfg created", "Pod api created"}
	for i, o := range resp.Objects {
		if got := o.Kind + " " + o.Name + " " + o.Outcome; i >= len(want) || got != want[i] {
			t.Errorf("apply result %d: %q; want %v", i, got, want)
		}
	}
	waitFor(t, "api runs", func() bool {
		d, err := client.DescribePod(ctx, "default", "api")
		return err == nil && d.Pod.Status.Phase == v1.PodRunning
	})
	list, err := client.ListPods(ctx, "default")
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "api" {
		t.Fatalf("list: %v %+v", err, list.Items)
	}
	if other, _ := client.ListPods(ctx, "other"); len(other.Items) != 0 {
		t.Errorf("namespace other lists %d pods", len(other.Items))
	}
	detail, err := client.DescribePod(ctx, "default", "api")
	if err != nil || len(detail.Events) == 0 || len(detail.LogPaths) != 1 {
		t.Errorf("describe: %v, %d events, log paths %v; want events and one log path", err, len(detail.Events), detail.LogPaths)
	}
	events, err := client.ListEvents(ctx, "default")
	if err != nil || len(events.Items) < len(detail.Events) {
		t.Errorf("list events: %v, %+v; want the pod's %d events at least", err, events.Items, len(detail.Events))
	}
	for i, e := range events.Items {
		if e.Pod != "api" || e.Namespace != "default" || e.PodUID != string(detail.Pod.UID) || (i > 0 && e.LastTime.Before(events.Items[i-1].LastTime)) {
			t.Errorf("event %d: %+v; want one of default/api (%s), in order of last occurrence", i, e, detail.Pod.UID)
		}
	}
	if other, err := client.ListEvents(ctx, "other"); err != nil || len(other.Items) != 0 {
		t.Errorf("namespace other has events %+v, %v", other.Items, err)
	}
	if _, err := client.Delete(ctx, "default", "api", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "api gone", func() bool {
		_, err := client.DescribePod(ctx, "default", "api")
		return errors.Is(err, errdefs.ErrNotFound)
	})
}

func TestAPIRefusesBadRequests(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	client := serveAPI(t, a.Agent)
	ctx := context.Background()
	if _, err := client.Delete(ctx, "default", "missing", nil); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("delete of a missing pod: %v; want not found naming it", err)
	}
	bad := bundle(t, `
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers: [{name: app, image: busybox}]
`)
	bad.Pods[0].Spec.Containers[0].Name = "Not_A_Name"
	_, err := client.Apply(ctx, agentapi.ApplyRequest{Bundle: bad})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "spec.containers[0].name") {
		t.Errorf("apply of an invalid pod: %v; want invalid argument naming the field", err)
	}
	traversal := bundle(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: sly}\nspec:\n  containers: [{name: app, image: busybox}]\n")
	traversal.Pods[0].UID = "../../etc" // a bundle built by hand: the manifest package never gives this
	if _, err := client.Apply(ctx, agentapi.ApplyRequest{Bundle: traversal}); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "metadata.uid") {
		t.Errorf("apply of a pod whose uid is a path: %v; want invalid argument naming metadata.uid", err)
	}
	if _, err := client.Apply(ctx, agentapi.ApplyRequest{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("apply of nothing: %v; want invalid argument", err)
	}
	if _, err := client.Apply(ctx, agentapi.ApplyRequest{WatchDir: "relative/dir"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("watch of a relative directory: %v; want invalid argument", err)
	}
	if _, err := client.Unwatch(ctx, "/not/watched"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unwatch of a directory not watched: %v; want not found", err)
	}
}

func TestAPIRefusesDeletingAPodOfAWatchedDirectory(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	client := serveAPI(t, a.Agent)
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: static}\nspec:\n  containers: [{name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, '1000']}]\n"
	if err := os.WriteFile(filepath.Join(dir, "static.yaml"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp, err := client.Apply(ctx, agentapi.ApplyRequest{WatchDir: dir})
	if err != nil || len(resp.Pods()) != 1 {
		t.Fatalf("watch: %v %+v", err, resp)
	}
	if _, err := client.Delete(ctx, "default", "static", nil); !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), dir) {
		t.Errorf("delete of a watched pod: %v; want a refusal naming the directory", err)
	}
	if resp, err := client.Unwatch(ctx, dir); err != nil || len(resp.Pods) != 1 {
		t.Errorf("unwatch: %v %+v; want the pod deleted", err, resp)
	}
	waitFor(t, "static gone", func() bool { return len(a.ListPods("").Items) == 0 })
}
