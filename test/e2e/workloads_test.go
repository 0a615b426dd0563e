package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// webDeployment is 3 replicas, each ready 2 s after it starts, rolled one
// pod at a time (maxSurge 1, maxUnavailable 0).
func webDeployment(version string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: busybox
        imagePullPolicy: IfNotPresent
        env: [{name: VERSION, value: "` + version + `"}]
        command: [sh, -c, "sleep 2; touch /tmp/ready; exec sleep 3600"]
        readinessProbe:
          exec: {command: [test, -f, /tmp/ready]}
          periodSeconds: 1
`
}

// A Deployment of 3: its ReplicaSet web-<hash> and pods web-<hash>-xxxxx;
// a template change rolls with readiness, never below 3 ready pods nor
// above 4; scale; kill -9 of the agent keeps the same pods; delete
// cascades to the ReplicaSets and pods; get and describe say so.
func TestDeploymentRollsScalesAndCascades(t *testing.T) {
	onEachRuntime(t, deploymentRollsScalesAndCascades)
}

func deploymentRollsScalesAndCascades(t *testing.T, n *node) {
	if out := n.apply("web.yaml", webDeployment("v1")); !strings.Contains(out, "deployment.apps/web created") {
		t.Fatalf("apply: %q", out)
	}
	n.waitDeployment("3 available", func(d *appsv1.Deployment) bool {
		return d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3
	})
	first := n.ownedPods()
	hash := checkNames(t, first)
	if out := n.must("get", "deploy"); !regexp.MustCompile(`(?m)^NAME +READY +UP-TO-DATE +AVAILABLE +AGE\nweb +3/3 +3 +3 +`).MatchString(out) {
		t.Errorf("get deploy:\n%s", out)
	}
	if out := n.must("get", "rs"); !regexp.MustCompile(`(?m)^NAME +DESIRED +CURRENT +READY +AGE\nweb-` + hash + ` +3 +3 +3 +`).MatchString(out) {
		t.Errorf("get rs:\n%s", out)
	}

	n.apply("web.yaml", webDeployment("v2"))
	d := n.waitDeployment("the rollout completes", func(d *appsv1.Deployment) bool {
		pods := n.ownedPods()
		ready := 0
		for _, p := range pods {
			if readyPod(p) {
				ready++
			}
		}
		if ready < 3 || len(pods) > 4 {
			t.Fatalf("during the rollout: %d pods, %d ready; want at most 4 and at least 3 ready", len(pods), ready)
		}
		return d.Status.ObservedGeneration == 2 && d.Status.UpdatedReplicas == 3 && d.Status.Replicas == 3 && d.Status.AvailableReplicas == 3
	})
	newHash := checkNames(t, n.ownedPods())
	if newHash == hash || d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("after the rollout: pod-template-hash %s (was %s), revision %q", newHash, hash, d.Annotations["deployment.kubernetes.io/revision"])
	}
	if out := n.must("describe", "deploy", "web"); !strings.Contains(out, "NewReplicaSet:") || !strings.Contains(out, "web-"+newHash+" (3/3 replicas created)") || !strings.Contains(out, "ScalingReplicaSet") {
		t.Errorf("describe deploy web:\n%s", out)
	}

	if out := n.must("rollout", "status", "deploy/web"); !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Errorf("rollout status: %q", out)
	}
	if out := n.must("rollout", "history", "deploy/web"); !regexp.MustCompile(`(?m)^REVISION +CHANGE-CAUSE\n1 +<none>\n2 +<none>$`).MatchString(out) {
		t.Errorf("rollout history:\n%s", out)
	}
	n.must("scale", "deploy/web", "--replicas=2")
	n.waitDeployment("2 replicas", func(d *appsv1.Deployment) bool {
		return d.Status.Replicas == 2 && d.Status.AvailableReplicas == 2 && len(n.ownedPods()) == 2
	})
	before := n.ownedPods()
	n.restartAgent()
	n.waitDeployment("2 available after the restart", func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 2 })
	time.Sleep(3 * time.Second) // a few controller passes: nothing may be made again
	after := n.ownedPods()
	for name, p := range before {
		if len(after) != 2 || after[name].UID != p.UID {
			t.Fatalf("after kill -9 of the agent the pods are %v; want %v unchanged", podNames(after), podNames(before))
		}
	}

	if out := n.must("delete", "-f", n.write("web.yaml", webDeployment("v2"))); !strings.Contains(out, `deployment.apps "web" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	if pods := n.podList(); len(pods) != 0 {
		t.Errorf("after delete deploy: %d pods listed", len(pods))
	}
	for _, kind := range []string{"deploy", "rs"} {
		if out, errOut, err := n.berth("get", kind); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
			t.Errorf("get %s after delete: %q %q %v", kind, out, errOut, err)
		}
	}
	if sandboxes, _ := n.criObjects(nil); len(sandboxes) != 0 {
		t.Errorf("the runtime holds %d sandboxes after the delete", len(sandboxes))
	}
}

// A ReplicaSet of its own: its pods are <name>-xxxxx; `delete rs` takes
// them with it.
func TestReplicaSetRunsItsPodsAndTakesThemAlong(t *testing.T) {
	onEachRuntime(t, replicaSetRunsItsPodsAndTakesThemAlong)
}

func replicaSetRunsItsPodsAndTakesThemAlong(t *testing.T, n *node) {
	rs := strings.NewReplacer("kind: Deployment", "kind: ReplicaSet", "name: web}", "name: solo}", "replicas: 3", "replicas: 2",
		"  strategy:\n    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}\n", "").Replace(webDeployment("v1"))
	if out := n.apply("solo.yaml", rs); !strings.Contains(out, "replicaset.apps/solo created") {
		t.Fatalf("apply: %q", out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, err := n.berth("get", "rs", "solo")
		if err == nil && regexp.MustCompile(`(?m)^solo +2 +2 +2 +`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "rs", "solo")
			t.Fatalf("get rs solo: %q %v\n%s", out, err, desc)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pods := n.ownedPods()
	for name := range pods {
		if !regexp.MustCompile(`^solo-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(name) {
			t.Errorf("pod %s", name)
		}
	}
	if out := n.must("describe", "rs", "solo"); len(pods) != 2 || !strings.Contains(out, "Pods Status:") || !strings.Contains(out, "SuccessfulCreate") {
		t.Errorf("%d pods; describe rs solo:\n%s", len(pods), out)
	}
	if out := n.must("delete", "rs", "solo"); !strings.Contains(out, `replicaset.apps "solo" deleted`) {
		t.Errorf("delete rs: %q", out)
	}
	if pods := n.podList(); len(pods) != 0 {
		t.Errorf("after delete rs: %d pods listed", len(pods))
	}
}

// waitDeployment polls the Deployment web until cond holds.
func (n *node) waitDeployment(what string, cond func(*appsv1.Deployment) bool) *appsv1.Deployment {
	n.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceDeployment, "default", "web")
		if err == nil && cond(detail.Deployment) {
			return detail.Deployment
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "deploy", "web")
			pods, _, _ := n.berth("get", "pods")
			n.t.Fatalf("deployment web: timed out waiting until %s (last error %v)\n%s\n%s\n%s", what, err, desc, pods, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownedPods lists the pods a ReplicaSet owns that are not terminating.
func (n *node) ownedPods() map[string]v1.Pod {
	n.t.Helper()
	list, err := n.client.ListPods(context.Background(), "default")
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		n.remember(&p)
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "ReplicaSet" && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

// checkNames checks pods are web-<hash>-<5 characters of generateName's
// alphabet>, all of one hash, and returns it.
func checkNames(t *testing.T, pods map[string]v1.Pod) string {
	t.Helper()
	hash := ""
	for name, p := range pods {
		h := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if !regexp.MustCompile(`^web-`+regexp.QuoteMeta(h)+`-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(name) || (hash != "" && h != hash) {
			t.Errorf("pod %s with pod-template-hash %q", name, h)
		}
		hash = h
	}
	return hash
}

func podNames(pods map[string]v1.Pod) []string {
	var out []string
	for name := range pods {
		out = append(out, name)
	}
	return out
}
