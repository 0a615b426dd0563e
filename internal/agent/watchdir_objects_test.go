package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// dirWebYAML is a Deployment (of image) and its Service.
func dirWebYAML(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: ` + image + `, command: [sleep, "1000"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 18082, targetPort: 8080}]
`
}

const dirClaimYAML = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
`

func writeDirFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startDirAgent runs an agent with Services (on loopback, a fake
// interface) in dir, on a fake clock: confirmAbsences steps it.
func startDirAgent(t *testing.T, rt *criclienttest.Runtime, dir string) *testAgent {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return startServicesAgentOn(t, rt, dir, newFakeLink(), freePort(t), clk)
}

// confirmAbsences waits until a scan of dir found objects missing, then
// moves the agent's clock on to when a scan deletes them.
func (a *testAgent) confirmAbsences(t *testing.T, dir string) {
	t.Helper()
	waitFor(t, "a scan that finds objects missing", func() bool { return a.missing(dir) > 0 })
	a.clock.Step(absenceConfirmAfter)
}

// objects names the workloads, Services and claims of the agent, with
// their uids and generations: "Deployment web <uid> 1".
func (a *testAgent) dirObjects(dir string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, o := range a.dirObjectsLocked(dir) {
		s := o.kind + " " + o.name
		if o.workload != nil {
			s += " " + o.workload.uid() + " " + strings.Repeat("I", int(o.workload.meta().Generation))
		}
		out = append(out, s)
	}
	return out
}

// rescanned writes a pod file and waits for its pod: the directory was
// scanned again.
func (a *testAgent) rescanned(t *testing.T, dir, pod string) {
	t.Helper()
	writeDirFile(t, dir, pod+".yaml", staticPodYAML(pod))
	waitFor(t, "the rescan that adds "+pod, func() bool { _, err := a.DescribePod("default", pod); return err == nil })
}

// A watched directory's Deployment, Service and claim are applied as
// 'berth apply -f' applies them and marked as the directory's; a rescan
// that changes nothing leaves them as they are; a changed image rolls the
// Deployment; a file that fails validation keeps its objects; a removed
// file deletes them; the watch's end deletes the rest.
func TestWatchedDirectoryAppliesUpdatesAndPrunesWorkloads(t *testing.T) {
	rt := criclienttest.New()
	a := startDirAgent(t, rt, t.TempDir())
	dir := manifestDir(t)
	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:1"))
	writeDirFile(t, dir, "data.yaml", dirClaimYAML)
	resp, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, r := range resp.Objects {
		created = append(created, r.Kind+" "+r.Outcome)
	}
	for _, want := range []string{"Deployment created", "Service created", "PersistentVolumeClaim created"} {
		if !slices.Contains(created, want) {
			t.Errorf("watch: %v; want %q", created, want)
		}
	}
	waitFor(t, "2 web pods ready", func() bool { return readyCount(a.ownedPods("ReplicaSet")) == 2 })
	if d := a.deployment(t); d.Annotations[AnnotationWatchDir] != dir {
		t.Errorf("Deployment annotations %v; want %s=%s", d.Annotations, AnnotationWatchDir, dir)
	}
	before, pods := a.dirObjects(dir), a.ownedPods("ReplicaSet")
	if len(before) != 3 {
		t.Fatalf("objects from the directory: %v; want the Deployment, Service and claim", before)
	}

	a.rescanned(t, dir, "marker1")
	if after := a.dirObjects(dir); !slices.Equal(after, before) || !samePods(a.ownedPods("ReplicaSet"), pods) {
		t.Errorf("a rescan that changed nothing changed %v to %v", before, after)
	}

	rollWatchedDeployment(t, a, dir)
	pruneWatchedObjects(t, a, dir)
}

// rollWatchedDeployment: a changed image in the file rolls the
// Deployment; a rescan after 'rollout restart' keeps the restart.
func rollWatchedDeployment(t *testing.T, a *testAgent, dir string) {
	t.Helper()
	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:2"))
	waitFor(t, "the new ReplicaSet rolled out", func() bool {
		d := a.deployment(t)
		return d.Generation == 2 && d.Status.UpdatedReplicas == 2 && d.Status.Replicas == 2 && len(a.replicaSetNames(t)) == 2
	})
	if _, err := a.rollout(t, agentapi.RolloutRequest{Restart: true}); err != nil {
		t.Fatal(err)
	}
	a.rescanned(t, dir, "marker-restart")
	if d := a.deployment(t); d.Generation != 3 || d.Spec.Template.Annotations[restartedAtKey] == "" {
		t.Errorf("after rollout restart and a rescan: generation %d, template annotations %v; want 3, the restart kept", d.Generation, d.Spec.Template.Annotations)
	}
}

// pruneWatchedObjects: a file that fails validation keeps its objects; a
// removed file deletes its workloads and Services but never its claim;
// the watch's end deletes the rest.
func pruneWatchedObjects(t *testing.T, a *testAgent, dir string) {
	t.Helper()
	writeDirFile(t, dir, "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: -1}\n")
	if err := os.Remove(filepath.Join(dir, "data.yaml")); err != nil {
		t.Fatal(err)
	}
	a.rescanned(t, dir, "marker2")
	if got := a.dirObjects(dir); len(got) != 3 {
		t.Errorf("with web.yaml invalid: %v; want its objects kept, and the claim while a file has problems", got)
	}

	writeDirFile(t, dir, "web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: left}\n")
	a.confirmAbsences(t, dir)
	waitFor(t, "the Deployment and Service deleted, the claim kept", func() bool {
		got := a.dirObjects(dir)
		return len(got) == 1 && got[0] == "PersistentVolumeClaim data"
	})
	waitFor(t, "the web pods gone", func() bool { return len(a.ownedPods("ReplicaSet")) == 0 })
	if _, err := a.DescribeWorkload(agentapi.ResourceService, "default", "web"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Service after its file went: %v; want not found", err)
	}

	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:1"))
	waitFor(t, "web back", func() bool { return len(a.dirObjects(dir)) == 3 })
	resp2, err := a.Unwatch(context.Background(), dir)
	if err != nil || len(resp2.Deleted) != 3 {
		t.Fatalf("unwatch: %+v %v; want the Deployment, Service and claim deleted", resp2, err)
	}
	waitFor(t, "everything gone", func() bool { return len(a.ListPods("").Items) == 0 && len(a.dirObjects("")) == 0 })
}

func samePods(a, b map[string]v1.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for name, p := range a {
		if b[name].UID != p.UID {
			return false
		}
	}
	return true
}

// A restarted agent watches again a directory whose workloads remain
// though none of its pods is left (the Deployment's pods are its
// ReplicaSet's, not the directory's).
func TestRecoveryWatchesADirectoryOfWorkloadsAgain(t *testing.T) {
	rt := criclienttest.New()
	state := t.TempDir()
	first := startDirAgent(t, rt, state)
	dir := manifestDir(t)
	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:1"))
	if _, err := first.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2 web pods ready", func() bool { return readyCount(first.ownedPods("ReplicaSet")) == 2 })
	before := first.dirObjects(dir)
	first.stop()

	second := startDirAgent(t, rt, state)
	if got := second.watched(); !slices.Equal(got, []string{dir}) {
		t.Fatalf("watches after recovery: %v; want %s", got, dir)
	}
	if got := second.dirObjects(dir); !slices.Equal(got, before) {
		t.Errorf("objects after recovery: %v; want %v", got, before)
	}
	writeDirFile(t, dir, "other.yaml", staticPodYAML("other")) // an empty directory deletes nothing
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	second.confirmAbsences(t, dir)
	waitFor(t, "web deleted with its file", func() bool { return len(second.dirObjects(dir)) == 0 && len(second.ownedPods("ReplicaSet")) == 0 })
}

// A file whose Deployment the agent refuses (its selector is immutable)
// keeps the Deployment as it is, and the first answer names the file; the
// watch's end deletes the Deployment, the Service and the claim.
func TestWatchedDirectoryKeepsWhatTheAgentRefuses(t *testing.T) {
	a := startDirAgent(t, criclienttest.New(), t.TempDir())
	dir := manifestDir(t)
	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:1"))
	writeDirFile(t, dir, "data.yaml", dirClaimYAML)
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir}); err != nil {
		t.Fatal(err)
	}
	before := a.dirObjects(dir)
	reselected := strings.ReplaceAll(dirWebYAML("busybox:2"), "app: web}", "app: web2}")
	writeDirFile(t, dir, "web.yaml", reselected)
	a.rescanned(t, dir, "marker")
	if got := a.dirObjects(dir); !slices.Equal(got, before) {
		t.Errorf("after a refused change: %v; want %v as they were", got, before)
	}
	a.Unwatch(context.Background(), dir) //nolint:errcheck // watched again below
	writeDirFile(t, dir, "web.yaml", dirWebYAML("busybox:1"))
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir}); err != nil {
		t.Fatal(err)
	}
	writeDirFile(t, dir, "web.yaml", reselected)
	_, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "web.yaml") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("watch with a refused file: %v; want the file and field named", err)
	}
	resp, err := a.Unwatch(context.Background(), dir)
	var deleted []string
	for _, r := range resp.Deleted {
		deleted = append(deleted, r.Kind+" "+r.Name)
	}
	if want := []string{"Deployment web", "Service web", "PersistentVolumeClaim data"}; err != nil || !slices.Equal(deleted, want) {
		t.Errorf("unwatch: %v %v; want %v", deleted, err, want)
	}
	waitFor(t, "the claim gone", func() bool { return len(a.claimList(t)) == 0 })
}
