package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

const capacityDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: crowd}
spec:
  replicas: %d
  selector: {matchLabels: {app: crowd}}
  template:
    metadata: {labels: {app: crowd}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

const capacityBarePod = `
apiVersion: v1
kind: Pod
metadata: {name: extra}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

const tooManyPodsMessage = "0/1 nodes are available: 1 Too many pods. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

// TestMaxPodsKeepsReplicasPendingAndRefusesBarePods runs a node with
// --max-pods=8 and a Deployment of 20 replicas: 8 pods run, the others
// wait Pending with the scheduler's reason, never more than 8 are placed;
// a bare pod is refused OutOfpods with kubelet's status; pods deleted
// free their room for waiting ones, and a scale-down leaves no pod
// waiting. CRI Version and the agent's pod list answer within a second
// all along.
func TestMaxPodsKeepsReplicasPendingAndRefusesBarePods(t *testing.T) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) {
		n := start("--max-pods=8")
		if got := n.nodePodsCapacity(); got != "8" {
			t.Errorf("node capacity/allocatable pods %s, want 8", got)
		}
		probe := startResponsivenessProbe(n)
		n.apply("crowd.yaml", fmt.Sprintf(capacityDeployment, 20))
		bound, waiting := n.waitPlacement("8 pods run, 12 wait", func(bound, running, waiting int) bool {
			return bound == 8 && running == 8 && waiting == 12
		})
		if out := n.must("get", "pods", waiting[0]); !regexp.MustCompile(`(?m)^` + waiting[0] + ` +0/1 +Pending +0 `).MatchString(out) {
			t.Errorf("get pods %s:\n%s", waiting[0], out)
		}
		if !n.hasEventSaying(waiting[0], "FailedScheduling", tooManyPodsMessage) {
			t.Errorf("pod %s has no FailedScheduling event %q", waiting[0], tooManyPodsMessage)
		}

		n.apply("extra.yaml", capacityBarePod)
		extra := n.waitPod("extra", "refused", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		if want := "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 8, capacity: 8"; extra.Status.Reason != "OutOfpods" || extra.Status.Message != want {
			t.Errorf("bare pod: reason %q message %q, want OutOfpods %q", extra.Status.Reason, extra.Status.Message, want)
		}
		if out := n.must("get", "pods", "extra"); !regexp.MustCompile(`(?m)^extra +0/1 +OutOfpods +0 `).MatchString(out) {
			t.Errorf("get pods extra:\n%s", out)
		}
		if !n.hasEventSaying("extra", "OutOfpods", "Node didn't have enough resource: pods") {
			t.Error("no OutOfpods event for the refused pod")
		}
		if sandboxes, _ := n.criObjects(map[string]string{podspec.LabelPodName: "extra"}); len(sandboxes) != 0 {
			t.Errorf("the runtime holds %d sandboxes of the refused pod", len(sandboxes))
		}

		for _, name := range bound[:2] {
			n.must("delete", "pod", name)
		}
		n.waitPlacement("two waiting pods run in the deleted pods' room", func(b, running, w int) bool {
			return b == 8 && running == 8 && w == 12 && n.countRunning(waiting) == 2
		})
		n.apply("crowd.yaml", fmt.Sprintf(capacityDeployment, 6))
		n.waitPlacement("6 pods run and none waits", func(b, running, w int) bool { return b == 6 && running == 6 && w == 0 })
		probe.check(t)
	})
}

// nodePodsCapacity reads the node's pods capacity, checking allocatable
// says the same.
func (n *node) nodePodsCapacity() string {
	n.t.Helper()
	var node v1.Node
	if err := json.Unmarshal([]byte(n.must("get", "node", "-o", "json")), &node); err != nil {
		n.t.Fatal(err)
	}
	c, a := node.Status.Capacity[v1.ResourcePods], node.Status.Allocatable[v1.ResourcePods]
	if c.Cmp(a) != 0 {
		n.t.Errorf("pods capacity %s, allocatable %s", c.String(), a.String())
	}
	return c.String()
}

// waitPlacement polls the ReplicaSet's pods until cond holds of how many
// are placed on the node, running, and waiting for the scheduler with
// the Too many pods reason; it fails at once when more than 8 are placed
// or a pod waits for another reason. It returns the placed and the
// waiting pods' names.
func (n *node) waitPlacement(what string, cond func(bound, running, waiting int) bool) (bound, waiting []string) {
	n.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		bound, waiting = nil, nil
		up := 0
		pods := n.ownedPods()
		var waitingPods []v1.Pod
		for _, p := range pods {
			c := podConditionOf(p, v1.PodScheduled)
			switch {
			case p.Spec.NodeName != "":
				bound = append(bound, p.Name)
				if running("app")(p) {
					up++
				}
			case p.Status.Phase == v1.PodPending && c.Reason == v1.PodReasonUnschedulable && c.Message == tooManyPodsMessage:
				waitingPods = append(waitingPods, p)
			default:
				n.t.Fatalf("pod %s: phase %s PodScheduled %+v: neither placed nor waiting for room", p.Name, p.Status.Phase, c)
			}
		}
		if len(bound) > 8 {
			n.t.Fatalf("%d pods placed on a node of 8: %v", len(bound), bound)
		}
		for _, p := range waitingPods {
			waiting = append(waiting, p.Name)
		}
		if cond(len(bound), up, len(waiting)) {
			return bound, waiting
		}
		if time.Now().After(deadline) {
			out, _, _ := n.berth("get", "pods")
			n.t.Fatalf("timed out waiting until %s: %d placed (%d running), %d waiting\n%s", what, len(bound), up, len(waiting), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countRunning counts the named pods whose app container runs.
func (n *node) countRunning(names []string) int {
	count := 0
	for _, name := range names {
		detail, err := n.client.DescribePod(context.Background(), "default", name)
		if err == nil && running("app")(detail.Pod) {
			count++
		}
	}
	return count
}

// responsivenessProbe calls CRI Version (what `crictl version` calls)
// and the agent's pod list every 100 ms and keeps the slowest answer of
// each.
type responsivenessProbe struct {
	stop    context.CancelFunc
	done    sync.WaitGroup
	mu      sync.Mutex
	slowest map[string]time.Duration
	slow    []string // the calls over 300 ms, for the log
	errs    []string
}

func startResponsivenessProbe(n *node) *responsivenessProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &responsivenessProbe{stop: cancel, slowest: map[string]time.Duration{}}
	calls := map[string]func(context.Context) error{
		"CRI Version": func(ctx context.Context) error {
			_, err := n.rt.cri().Version(ctx, &runtimeapi.VersionRequest{})
			return err
		},
		"agent ListPods": func(ctx context.Context) error {
			_, err := n.client.ListPods(ctx, "")
			return err
		},
	}
	for name, call := range calls {
		p.done.Add(1)
		go func() {
			defer p.done.Done()
			for ctx.Err() == nil {
				callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				began := time.Now()
				err := call(callCtx)
				took := time.Since(began)
				cancel()
				p.mu.Lock()
				p.slowest[name] = max(p.slowest[name], took)
				if took > 300*time.Millisecond {
					p.slow = append(p.slow, fmt.Sprintf("%s at %s took %s", name, began.Format("15:04:05.000"), took))
				}
				if err != nil && ctx.Err() == nil {
					p.errs = append(p.errs, name+": "+err.Error())
				}
				p.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	return p
}

// responsiveBound is how long a probed call may take: the 1 s,
// or 3 s when berth is built with the race detector (BERTH_TEST_RACE=1),
// which slows the daemon several times over on CI's two cores. The
// slowest answers are logged either way.
func responsiveBound() time.Duration {
	if os.Getenv("BERTH_TEST_RACE") == "1" {
		return 3 * time.Second
	}
	return time.Second
}

// check stops the probe and fails the test if a call failed or took
// responsiveBound or more.
func (p *responsivenessProbe) check(t *testing.T) {
	t.Helper()
	p.stop()
	p.done.Wait()
	if len(p.slow) > 0 {
		t.Logf("slow calls: %s", strings.Join(p.slow, "; "))
	}
	if len(p.errs) > 0 {
		t.Errorf("calls failed while the pods were made: %s", strings.Join(p.errs, "; "))
	}
	for name, took := range p.slowest {
		t.Logf("slowest %s: %s", name, took)
		if bound := responsiveBound(); took >= bound {
			t.Errorf("%s took %s, want under %s", name, took, bound)
		}
	}
}
