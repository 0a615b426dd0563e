package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// dbStatefulSet is 3 OrderedReady pods, each ready 2 s after it starts,
// each appending a line to its claim at every start.
const dbStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'echo "$(hostname) start" >> /data/log; sleep 2; touch /tmp/ready; exec sleep 3600']
        readinessProbe:
          exec: {command: [test, -f, /tmp/ready]}
          periodSeconds: 1
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Mi}}
`

// A StatefulSet of 3: ordinals in order, each Ready before the next; each
// pod keeps its claim across its replacement, kill -9 of the agent, a
// scale down (in reverse) and up; delete -f removes the set, its claims
// stay (Retain) until deleted.
func TestStatefulSetOrdinalsAndClaims(t *testing.T) {
	onEachRuntime(t, statefulSetOrdinalsAndClaims)
}

func statefulSetOrdinalsAndClaims(t *testing.T, n *node) {
	file := n.write("db.yaml", dbStatefulSet)
	if out := n.must("apply", "-f", file); !strings.Contains(out, "statefulset.apps/db created") {
		t.Fatalf("apply: %q", out)
	}
	n.waitStatefulSet("3 ready", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	pods := n.setPods()
	for i, name := range []string{"db-0", "db-1", "db-2"} {
		p := pods[name]
		if p.Spec.Hostname != name || p.Spec.Subdomain != "db" || p.Labels[appsv1.PodIndexLabel] != string(rune('0'+i)) {
			t.Fatalf("pod %s: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		if i > 0 {
			prev := readySince(pods["db-"+strconv.Itoa(i-1)])
			if p.CreationTimestamp.Before(&prev) {
				t.Errorf("%s was created at %v, before the pod before it was Ready (%v)", name, p.CreationTimestamp, prev)
			}
		}
		n.waitExec(name, "db", "its line in its claim", func(out string) bool { return out == name+" start\n" }, "cat", "/data/log")
	}
	if out := n.must("get", "sts"); !regexp.MustCompile(`(?m)^NAME +READY +AGE\ndb +3/3 +`).MatchString(out) {
		t.Errorf("get sts:\n%s", out)
	}
	if out := n.must("get", "pvc"); !regexp.MustCompile(`(?m)^NAME +STATUS +VOLUME +CAPACITY +ACCESS MODES +STORAGECLASS +VOLUMEATTRIBUTESCLASS +AGE\ndata-db-0 +Bound +pvc-\S+ +10Mi +RWO +<unset> +<unset> +`).MatchString(out) {
		t.Errorf("get pvc:\n%s", out)
	}
	if out := n.must("describe", "sts", "db"); !strings.Contains(out, "Pods Status:") || !strings.Contains(out, "3 Running") ||
		!strings.Contains(out, "create Claim data-db-2 Pod db-2 in StatefulSet db success") || !strings.Contains(out, "create Pod db-2 in StatefulSet db successful") {
		t.Errorf("describe sts:\n%s", out)
	}
	if out := n.must("describe", "pvc", "data-db-1"); !regexp.MustCompile(`Used By:\s+db-1\n`).MatchString(out) {
		t.Errorf("describe pvc:\n%s", out)
	}

	// A deleted pod comes back under its name, with its data.
	old := pods["db-1"].UID
	n.must("delete", "pod", "db-1")
	n.waitPod("db-1", "its replacement ready", func(p v1.Pod) bool { return p.UID != old && readyPod(p) })
	n.waitExec("db-1", "db", "both starts in its claim", func(out string) bool { return out == "db-1 start\ndb-1 start\n" }, "cat", "/data/log")

	// kill -9 of the agent: the same pods, the same data.
	before := n.setPods()
	n.restartAgent()
	n.waitStatefulSet("3 ready after the restart", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	for name, p := range n.setPods() {
		if before[name].UID != p.UID {
			t.Fatalf("after kill -9 of the agent pod %s has uid %s, was %s", name, p.UID, before[name].UID)
		}
	}

	// Scale to 1: db-2 goes before db-1; the claims stay.
	n.must("scale", "sts/db", "--replicas=1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods := n.setPods()
		_, has1 := pods["db-1"]
		_, has2 := pods["db-2"]
		if has2 && !has1 {
			t.Fatalf("db-1 went before db-2: %v", podNames(pods))
		}
		if len(pods) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scaling to 1: pods %v", podNames(pods))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := n.must("get", "pvc"); strings.Count(out, "Bound") != 3 {
		t.Errorf("claims after scaling down:\n%s", out)
	}
	n.must("scale", "sts/db", "--replicas=3")
	n.waitStatefulSet("3 ready again", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
	n.waitExec("db-1", "db", "db-1's earlier data", func(out string) bool { return out == "db-1 start\ndb-1 start\ndb-1 start\n" }, "cat", "/data/log")
	n.waitExec("db-2", "db", "db-2's earlier data", func(out string) bool { return out == "db-2 start\ndb-2 start\n" }, "cat", "/data/log")
	if out := n.must("rollout", "status", "sts/db"); !strings.Contains(out, "statefulset rolling update complete 3 pods at revision db-") {
		t.Errorf("rollout status: %q", out)
	}

	// delete -f: the set and its pods go, the claims (Retain) stay.
	if out := n.must("delete", "-f", file); !strings.Contains(out, `statefulset.apps "db" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	n.waitNoPods()
	if out, errOut, err := n.berth("get", "sts"); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
		t.Errorf("get sts after delete: %q %q %v", out, errOut, err)
	}
	if out := n.must("get", "pvc"); strings.Count(out, "Bound") != 3 {
		t.Errorf("claims after deleting the set:\n%s", out)
	}
	if out := n.must("delete", "pvc", "data-db-0", "data-db-1", "data-db-2"); strings.Count(out, "deleted") != 3 {
		t.Errorf("delete pvc: %q", out)
	}
	if out, errOut, err := n.berth("get", "pvc"); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
		t.Errorf("get pvc after delete: %q %q %v", out, errOut, err)
	}
}

const laterPod = `apiVersion: v1
kind: Pod
metadata: {name: waiter}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'echo hello > /d/hello; exec sleep 3600']
    volumeMounts: [{name: d, mountPath: /d}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: later}}]
`

const laterClaim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: later}
spec:
  accessModes: [ReadWriteOncePod]
  resources: {requests: {storage: 1Mi}}
`

// A pod naming a claim that does not exist waits (FailedMount, Pending)
// and starts once the claim is applied; a claim deleted in use is
// Terminating until its pod is gone.
func TestPodWaitsForItsClaim(t *testing.T) {
	onEachRuntime(t, podWaitsForItsClaim)
}

func podWaitsForItsClaim(t *testing.T, n *node) {
	n.apply("waiter.yaml", laterPod)
	n.waitPod("waiter", "FailedMount for the missing claim", func(p v1.Pod) bool {
		return n.hasEventSaying("waiter", "FailedMount", `persistentvolumeclaim "later" not found`) && p.Status.Phase == v1.PodPending
	})
	n.apply("later.yaml", laterClaim)
	n.waitPod("waiter", "running with its claim", readyPod)
	n.waitExec("waiter", "app", "its file", func(out string) bool { return out == "hello\n" }, "cat", "/d/hello")
	n.must("delete", "pvc", "later")
	if out := n.must("get", "pvc", "later"); !regexp.MustCompile(`later +Terminating`).MatchString(out) {
		t.Errorf("a claim deleted in use:\n%s", out)
	}
	n.must("delete", "pod", "waiter")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := n.berth("get", "pvc")
		if !strings.Contains(out, "later") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim is still there once its pod is gone:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatefulSet polls the StatefulSet db until cond holds.
func (n *node) waitStatefulSet(what string, cond func(*appsv1.StatefulSet) bool) {
	n.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db")
		if err == nil && cond(detail.StatefulSet) {
			return
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "sts", "db")
			pods, _, _ := n.berth("get", "pods")
			n.t.Fatalf("statefulset db: timed out waiting until %s (last error %v)\n%s\n%s\n%s", what, err, desc, pods, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setPods lists the pods a StatefulSet owns that are not terminating.
func (n *node) setPods() map[string]v1.Pod {
	n.t.Helper()
	list, err := n.client.ListPods(context.Background(), "default")
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		n.remember(&p)
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "StatefulSet" && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

// waitNoPods waits until the agent lists no pod.
func (n *node) waitNoPods() {
	n.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(n.podList()) > 0 {
		if time.Now().After(deadline) {
			n.t.Fatalf("pods left: %d", len(n.podList()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasEventSaying reports whether the pod has an event with reason whose
// message holds text.
func (n *node) hasEventSaying(pod, reason, text string) bool {
	detail, err := n.client.DescribePod(context.Background(), "default", pod)
	if err != nil {
		return false
	}
	for _, e := range detail.Events {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func readySince(p v1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}
