package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const dbStatefulSet = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: app
        image: busybox:1
        command: [sleep, "1000"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
`

func (a *testAgent) claimList(t *testing.T) map[string]v1.PersistentVolumeClaim {
	t.Helper()
	l, err := a.ListWorkloads(agentapi.ResourcePersistentVolumeClaim, "default")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.PersistentVolumeClaim{}
	for _, c := range l.PersistentVolumeClaims {
		out[c.Name] = c
	}
	return out
}

// claimFile is a file in the directory of a claim.
func (a *testAgent) claimFile(t *testing.T, claim string) string {
	t.Helper()
	c, found, err := a.claims.store.Get("default", claim)
	if err != nil || !found {
		t.Fatalf("claim %s: %v, %v", claim, found, err)
	}
	return filepath.Join(a.claims.store.Path(c), "row")
}

func readyTime(t *testing.T, p v1.Pod) v1.PodCondition {
	t.Helper()
	if p.Name == "" {
		return v1.PodCondition{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c
		}
	}
	t.Fatalf("pod %s has no Ready condition", p.Name)
	return v1.PodCondition{}
}

func TestStatefulSetOrdinalsClaimsScaleAndRestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, dbStatefulSet)
	waitFor(t, "3 ready pods", func() bool { return readyCount(first.ownedPods("StatefulSet")) == 3 })
	pods := first.ownedPods("StatefulSet")
	for i, name := range []string{"db-0", "db-1", "db-2"} {
		p := pods[name]
		if p.Spec.Hostname != name || p.Spec.Subdomain != "db" || p.Labels["apps.kubernetes.io/pod-index"] != string(rune('0'+i)) ||
			p.Labels["statefulset.kubernetes.io/pod-name"] != name || !strings.HasPrefix(p.Labels["controller-revision-hash"], "db-") {
			t.Fatalf("pod %s: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		if prev := readyTime(t, pods["db-"+strconv.Itoa(i-1)]); i > 0 && p.CreationTimestamp.Before(&prev.LastTransitionTime) {
			t.Fatalf("%s was made before the pod before it was ready", name)
		}
	}
	claims := first.claimList(t)
	for _, name := range []string{"data-db-0", "data-db-1", "data-db-2"} {
		if c, ok := claims[name]; !ok || c.Status.Phase != v1.ClaimBound || c.Labels["app"] != "db" {
			t.Fatalf("claims %v; want %s Bound with the selector's labels", keys(claims), name)
		}
		if err := os.WriteFile(first.claimFile(t, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A deleted pod comes back under its name, with its claim.
	oldUID := pods["db-1"].UID
	if _, err := first.Delete(context.Background(), "default", "db-1", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-1 back", func() bool {
		p, ok := first.ownedPods("StatefulSet")["db-1"]
		return ok && p.UID != oldUID && ready(p)
	})
	if b, err := os.ReadFile(first.claimFile(t, "data-db-1")); err != nil || string(b) != "data-db-1" {
		t.Fatalf("db-1's data after its replacement: %q %v", b, err)
	}
	waitFor(t, "the status counts 3 ready", func() bool {
		d, err := first.DescribeWorkload(agentapi.ResourceStatefulSet, "default", "db")
		return err == nil && d.StatefulSet.Status.ReadyReplicas == 3 && len(d.Pods) == 3 && len(d.Revisions) == 1
	})
	before := first.ownedPods("StatefulSet")
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the restarted agent's set", func() bool { return readyCount(second.ownedPods("StatefulSet")) == 3 })
	for name, p := range second.ownedPods("StatefulSet") {
		if before[name].UID != p.UID {
			t.Fatalf("pod %s changed uid across the restart", name)
		}
	}

	// Scale down: highest first, claims kept (whenScaled Retain).
	if _, err := second.Scale(context.Background(), agentapi.ResourceStatefulSet, "default", "db", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "1 pod", func() bool { return len(second.ownedPods("StatefulSet")) == 1 })
	if _, ok := second.ownedPods("StatefulSet")["db-0"]; !ok || len(second.claimList(t)) != 3 {
		t.Fatalf("after scaling to 1: pods %v claims %v", keys(second.ownedPods("StatefulSet")), keys(second.claimList(t)))
	}
	// Deleting the set keeps its claims (whenDeleted Retain).
	if _, err := second.DeleteWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pods and the record gone", func() bool {
		files, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		return len(second.ListPods("").Items) == 0 && len(files) == 0
	})
	if len(second.claimList(t)) != 3 {
		t.Fatalf("claims after deleting the set: %v", keys(second.claimList(t)))
	}
}

const laterPod = `
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - {name: app, image: busybox:1, command: [sleep, "1000"], volumeMounts: [{name: d, mountPath: /d}]}
  volumes: [{name: d, persistentVolumeClaim: {claimName: later}}]
`

const laterClaim = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: later}
spec:
  accessModes: [ReadWriteOncePod]
  resources: {requests: {storage: 1Mi}}
`

func (a *testAgent) hasEvent(t *testing.T, pod, reason, text string) bool {
	d, err := a.DescribePod("default", pod)
	if err != nil {
		return false
	}
	for _, e := range d.Events {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// A pod waits for a claim that is not there; ReadWriteOncePod keeps a
// second pod out; a claim deleted in use is Terminating until its pod goes.
func TestClaimWaitsOncePodAndProtection(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, strings.Replace(laterPod, "%s", "first", 1))
	waitFor(t, "FailedMount for the missing claim", func() bool {
		return a.hasEvent(t, "first", "FailedMount", `persistentvolumeclaim "later" not found`) && a.pod(t, "first").Status.Phase == v1.PodPending
	})
	a.apply(t, laterClaim)
	waitFor(t, "the pod runs once the claim is there", func() bool { return ready(a.pod(t, "first")) })

	a.apply(t, strings.Replace(laterPod, "%s", "second", 1))
	waitFor(t, "the second pod refused", func() bool {
		return a.hasEvent(t, "second", "FailedMount", "ReadWriteOncePod") && a.pod(t, "second").Status.Phase == v1.PodPending
	})
	if _, err := a.Delete(context.Background(), "default", "second", nil); err != nil {
		t.Fatal(err)
	}

	resp, err := a.DeleteWorkload(context.Background(), agentapi.ResourcePersistentVolumeClaim, "default", "later", nil)
	if err != nil || len(resp.Deleted) != 1 {
		t.Fatalf("delete claim: %+v %v", resp, err)
	}
	c, ok := a.claimList(t)["later"]
	if !ok || c.DeletionTimestamp == nil {
		t.Fatalf("a claim in use after its deletion: %+v; want it Terminating", c.ObjectMeta)
	}
	waitFor(t, "used by first only", func() bool {
		d, err := a.DescribeWorkload(agentapi.ResourcePersistentVolumeClaim, "default", "later")
		return err == nil && len(d.UsedBy) == 1 && d.UsedBy[0] == "first"
	})
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, laterClaim)}); err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("re-applying a Terminating claim: %v", err)
	}
	if _, err := a.Delete(context.Background(), "default", "first", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the claim released", func() bool { _, ok := a.claimList(t)["later"]; return !ok })
}

// A restarted agent knows which pod holds a claim before any pod syncs
// again (a ReadWriteOncePod claim stays its pod's).
func TestClaimUsersSurviveARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, laterClaim+"---\n"+strings.Replace(laterPod, "%s", "first", 1))
	waitFor(t, "the first pod runs", func() bool { return ready(first.pod(t, "first")) })
	if first.hasEvent(t, "first", "FailedMount", "") {
		t.Error("a pod applied with its claim could not mount it at first")
	}
	first.stop()
	held := &fakeVolumes{root: dir + "/root", setupGate: make(chan struct{})}
	second := startTestAgentWith(t, rt, dir, held)
	if !second.claims.mounted("default", "later") {
		t.Fatal("after a restart, before any volume setup, the claim has no user")
	}
	close(held.setupGate)
	second.apply(t, strings.Replace(laterPod, "%s", "second", 1))
	waitFor(t, "the second pod refused", func() bool {
		return second.hasEvent(t, "second", "FailedMount", "ReadWriteOncePod") && second.pod(t, "second").Status.Phase == v1.PodPending
	})
}

func (a *testAgent) statefulSet(t *testing.T) agentapi.WorkloadDetail {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceStatefulSet, "default", "db")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Rollout restart replaces the pods from the highest ordinal down; undo
// returns to the first revision; with whenScaled and whenDeleted Delete
// the claims go with their pods and with the set.
func TestStatefulSetRolloutAndClaimRetention(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, strings.Replace(dbStatefulSet, "replicas: 3", "replicas: 2\n  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete, whenDeleted: Delete}", 1))
	settled := func() bool {
		s := a.statefulSet(t).StatefulSet
		pods := a.ownedPods("StatefulSet")
		for _, p := range pods {
			if p.Labels["controller-revision-hash"] != s.Status.UpdateRevision {
				return false
			}
		}
		return readyCount(pods) == 2 && s.Status.ObservedGeneration == s.Generation && s.Status.CurrentRevision == s.Status.UpdateRevision
	}
	waitFor(t, "2 ready pods", settled)
	first := a.statefulSet(t).StatefulSet.Status.UpdateRevision
	if _, err := a.Rollout(context.Background(), agentapi.ResourceStatefulSet, "default", "db", agentapi.RolloutRequest{Restart: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restart rolled out", func() bool { return settled() && a.statefulSet(t).StatefulSet.Status.UpdateRevision != first })
	pods := a.ownedPods("StatefulSet")
	if db0, db1 := pods["db-0"], pods["db-1"]; db0.CreationTimestamp.Before(&db1.CreationTimestamp) {
		t.Errorf("db-0 was replaced before db-1 (%v, %v)", db0.CreationTimestamp, db1.CreationTimestamp)
	}
	if _, err := a.Rollout(context.Background(), agentapi.ResourceStatefulSet, "default", "db", agentapi.RolloutRequest{Undo: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the undo rolled out", func() bool { return settled() && a.statefulSet(t).StatefulSet.Status.UpdateRevision == first })
	if d := a.statefulSet(t); len(d.Revisions) != 2 {
		t.Errorf("revisions %d; want 2", len(d.Revisions))
	}

	if _, err := a.Scale(context.Background(), agentapi.ResourceStatefulSet, "default", "db", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-1 and its claim gone", func() bool {
		_, claim := a.claimList(t)["data-db-1"]
		return len(a.ownedPods("StatefulSet")) == 1 && !claim
	})
	if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every claim gone with the set", func() bool { return len(a.claimList(t)) == 0 && len(a.ListPods("").Items) == 0 })
}
