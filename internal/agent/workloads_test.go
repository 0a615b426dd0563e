package agent

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const webDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: busybox:1, command: [sleep, "1000"]}
`

// workloadPods lists the pods a controller owns, by name.
func (a *testAgent) ownedPods(kind string) map[string]v1.Pod {
	out := map[string]v1.Pod{}
	for _, p := range a.ListPods("default").Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == kind && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func (a *testAgent) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceDeployment, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	return d.Deployment
}

func readyCount(pods map[string]v1.Pod) int {
	n := 0
	for _, p := range pods {
		if ready(p) {
			n++
		}
	}
	return n
}

func TestDeploymentRunsRollsScalesAndSurvivesARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, webDeployment)
	waitFor(t, "3 available replicas", func() bool {
		d := first.deployment(t)
		return d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3 && readyCount(first.ownedPods("ReplicaSet")) == 3
	})
	list, err := first.ListWorkloads(agentapi.ResourceReplicaSet, "default")
	if err != nil || len(list.ReplicaSets) != 1 {
		t.Fatalf("replicasets: %+v %v", list, err)
	}
	rs := list.ReplicaSets[0]
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if rs.Name != "web-"+hash || rs.OwnerReferences[0].Name != "web" || rs.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Fatalf("ReplicaSet %s labels %v owners %v annotations %v", rs.Name, rs.Labels, rs.OwnerReferences, rs.Annotations)
	}
	name := regexp.MustCompile(`^web-` + hash + `-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	for n, p := range first.ownedPods("ReplicaSet") {
		if !name.MatchString(n) || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || p.OwnerReferences[0].UID != rs.UID {
			t.Fatalf("pod %s: labels %v owners %v", n, p.Labels, p.OwnerReferences)
		}
	}

	// A pod deleted by hand is replaced.
	var victim string
	for n := range first.ownedPods("ReplicaSet") {
		victim = n
	}
	if _, err := first.Delete(context.Background(), "default", victim, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a replacement", func() bool {
		pods := first.ownedPods("ReplicaSet")
		_, still := pods[victim]
		return !still && readyCount(pods) == 3
	})

	// A changed template rolls: never fewer than 3 ready (maxUnavailable 25% of 3 is 0).
	first.apply(t, strings.Replace(webDeployment, "busybox:1", "busybox:2", 1))
	waitFor(t, "the rollout completes", func() bool {
		if n := readyCount(first.ownedPods("ReplicaSet")); n < 3 {
			t.Fatalf("only %d ready pods during the rollout", n)
		}
		d := first.deployment(t)
		return d.Status.ObservedGeneration == 2 && d.Status.UpdatedReplicas == 3 && d.Status.Replicas == 3 && d.Status.AvailableReplicas == 3 &&
			d.Annotations["deployment.kubernetes.io/revision"] == "2"
	})

	if _, err := first.Scale(context.Background(), agentapi.ResourceDeployment, "default", "web", 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2 replicas", func() bool {
		return len(first.ownedPods("ReplicaSet")) == 2 && first.deployment(t).Status.Replicas == 2
	})
	before := first.ownedPods("ReplicaSet")
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the restarted agent reports the deployment", func() bool { return second.deployment(t).Status.AvailableReplicas == 2 })
	after := second.ownedPods("ReplicaSet")
	for n := range before {
		if _, kept := after[n]; !kept || len(after) != 2 {
			t.Fatalf("after the restart the pods are %v, want %v", keys(after), keys(before))
		}
	}

	resp, err := second.DeleteWorkload(context.Background(), agentapi.ResourceDeployment, "default", "web", nil)
	if err != nil || len(resp.Pods) != 2 {
		t.Fatalf("delete: %+v %v", resp, err)
	}
	waitFor(t, "every pod and record gone", func() bool {
		files, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		sandboxes, _ := rt.Counts()
		return len(second.ListPods("").Items) == 0 && len(files) == 0 && sandboxes == 0
	})
	if l, _ := second.ListWorkloads(agentapi.ResourceDeployment, ""); len(l.Deployments) != 0 {
		t.Fatalf("deployments left: %v", l.Deployments)
	}
}

func TestReapplyRefusesAChangedSelector(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, webDeployment)
	changed := strings.Replace(strings.Replace(webDeployment, "matchLabels: {app: web}", "matchLabels: {app: web, tier: x}", 1), "labels: {app: web}", "labels: {app: web, tier: x}", 1)
	_, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, changed)})
	if err == nil || !strings.Contains(err.Error(), "/manifests/test.yaml: Deployment default/web: spec.selector: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
		t.Fatalf("a changed selector: %v", err)
	}
	resp := a.apply(t, webDeployment)
	if len(resp.Objects) != 1 || resp.Objects[0].Outcome != agentapi.OutcomeUnchanged {
		t.Fatalf("re-applying the same Deployment: %+v", resp.Objects)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRolloutRestartAndUndo(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, strings.Replace(webDeployment, "replicas: 3", "replicas: 1", 1))
	settled := func(revision string) func() bool {
		return func() bool {
			d := a.deployment(t)
			return d.Annotations["deployment.kubernetes.io/revision"] == revision && d.Status.ObservedGeneration == d.Generation &&
				d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1 && d.Status.AvailableReplicas == 1
		}
	}
	waitFor(t, "revision 1 rolled out", settled("1"))
	first := a.deployment(t).Spec.Template
	if _, err := a.Rollout(context.Background(), agentapi.ResourceDeployment, "default", "web", agentapi.RolloutRequest{Restart: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revision 2 (restart) rolled out", settled("2"))
	if a.deployment(t).Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Fatal("restart did not set kubectl.kubernetes.io/restartedAt")
	}
	if _, err := a.Rollout(context.Background(), agentapi.ResourceDeployment, "default", "web", agentapi.RolloutRequest{Undo: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revision 3 (undo) rolled out", settled("3"))
	d, err := a.DescribeWorkload(agentapi.ResourceDeployment, "default", "web")
	if err != nil || len(d.ReplicaSets) != 2 || d.ReplicaSets[0].Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "" ||
		d.Deployment.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != first.Annotations["kubectl.kubernetes.io/restartedAt"] {
		t.Fatalf("after undo: %d ReplicaSets, newest %+v, %v", len(d.ReplicaSets), d.ReplicaSets[0].ObjectMeta, err)
	}
	if _, err := a.Rollout(context.Background(), agentapi.ResourceDeployment, "default", "web", agentapi.RolloutRequest{Undo: true, ToRevision: 9}); err == nil {
		t.Fatal("undo to a revision that does not exist succeeded")
	}
}

// A deletion saved before the agent died is finished by the next one.
func TestSavedDeletionIsResumedAfterARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, strings.Replace(webDeployment, "replicas: 3", "replicas: 2", 1))
	waitFor(t, "2 pods", func() bool { return len(first.ownedPods("ReplicaSet")) == 2 })
	first.stop()
	// As if the agent died right after saving the deletion mark.
	first.mu.Lock()
	for _, o := range first.workloads {
		now := metav1.Now()
		o.meta().DeletionTimestamp = &now
		if err := first.saveLocked(o); err != nil {
			t.Fatal(err)
		}
	}
	first.mu.Unlock()
	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the pods and records gone", func() bool {
		files, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		return len(second.ListPods("").Items) == 0 && len(files) == 0
	})
}
