package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// A paused Deployment holds its rollout: `rollout pause`, then a changed
// template applied (its manifest saying paused: true; one leaving it out
// would keep the pause too) makes no ReplicaSet and no pod; get and describe say so;
// restart is refused; `rollout resume` rolls the change out.
func TestPausedDeploymentHoldsItsRollout(t *testing.T) {
	onEachRuntime(t, pausedDeploymentHoldsItsRollout)
}

func progressingReason(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason
		}
	}
	return ""
}

func pausedDeploymentHoldsItsRollout(t *testing.T, n *node) {
	n.apply("web.yaml", webDeployment("v1"))
	n.waitDeployment("3 available", func(d *appsv1.Deployment) bool {
		return d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3
	})
	first := n.ownedPods()
	hash := checkNames(t, first)
	if out := n.must("rollout", "pause", "deploy/web"); out != "deployment.apps/web paused\n" {
		t.Errorf("rollout pause: %q", out)
	}
	if _, errOut, err := n.berth("rollout", "pause", "deploy/web"); err == nil || !strings.Contains(errOut, `deployments.apps "web" is already paused`) {
		t.Errorf("rollout pause of a paused Deployment: %q %v", errOut, err)
	}

	paused := strings.Replace(webDeployment("v2"), "  replicas: 3\n", "  replicas: 3\n  paused: true\n", 1)
	if out := n.apply("web.yaml", paused); !strings.Contains(out, "deployment.apps/web configured") {
		t.Fatalf("apply of a changed template: %q", out)
	}
	n.waitDeployment("the paused change observed", func(d *appsv1.Deployment) bool {
		return d.Status.ObservedGeneration == d.Generation && d.Spec.Paused && progressingReason(d) == "DeploymentPaused"
	})
	time.Sleep(3 * time.Second) // a few controller passes: none may make a pod
	after := n.ownedPods()
	for name, p := range first {
		if len(after) != 3 || after[name].UID != p.UID {
			t.Fatalf("paused, the pods are %v; want %v unchanged", podNames(after), podNames(first))
		}
	}
	if out := n.must("get", "rs"); !regexp.MustCompile(`(?m)^NAME +DESIRED +CURRENT +READY +AGE\nweb-` + hash + ` +3 +3 +3 +\S+\n$`).MatchString(out) {
		t.Errorf("get rs while paused:\n%s", out)
	}
	if out := n.must("get", "deploy"); !regexp.MustCompile(`(?m)^web +3/3 +0 +3 +`).MatchString(out) {
		t.Errorf("get deploy while paused (kubectl's UP-TO-DATE 0):\n%s", out)
	}
	desc := strings.Join(strings.Fields(n.must("describe", "deploy", "web")), " ")
	if !strings.Contains(desc, "Progressing Unknown DeploymentPaused") || !strings.Contains(desc, "NewReplicaSet: <none>") {
		t.Errorf("describe deploy web while paused:\n%s", desc)
	}
	if _, errOut, err := n.berth("rollout", "restart", "deploy/web"); err == nil || !strings.Contains(errOut, "can't restart paused deployment (run rollout resume first)") {
		t.Errorf("rollout restart of a paused Deployment: %q %v", errOut, err)
	}

	if out := n.must("rollout", "resume", "deploy/web"); out != "deployment.apps/web resumed\n" {
		t.Errorf("rollout resume: %q", out)
	}
	if out := n.must("rollout", "status", "deploy/web"); !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Errorf("rollout status after the resume: %q", out)
	}
	d := n.waitDeployment("the rollout completes", func(d *appsv1.Deployment) bool {
		return d.Status.UpdatedReplicas == 3 && d.Status.Replicas == 3 && d.Status.AvailableReplicas == 3 && len(n.ownedPods()) == 3
	})
	if newHash := checkNames(t, n.ownedPods()); newHash == hash || d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("after the resume: pod-template-hash %s (was %s), revision %q", newHash, hash, d.Annotations["deployment.kubernetes.io/revision"])
	}
	if out := n.must("delete", "deploy", "web"); !strings.Contains(out, `deployment.apps "web" deleted`) {
		t.Errorf("delete: %q", out)
	}
}
