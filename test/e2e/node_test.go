package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// node is one runtime with its agent, and the test's manifests.
type node struct {
	t         *testing.T
	rt        runtime
	client    *agentapi.Client
	logDir    string   // --pod-log-dir
	manifests string   // where apply writes the test's YAML
	agentArgs []string // the agent's flags at start
	watched   []string
}

// fastAgent are the agent settings every test gets: short back-off,
// relist and directory rescans, so that the suite stays fast.
var fastAgent = []string{
	"--backoff-initial=500ms", "--backoff-max=4s", "--backoff-reset=1m",
	"--relist-period=1s", "--watch-interval=500ms",
}

// startNode starts a runtime with its agent. Its teardown deletes every
// pod through the agent (which must leave nothing behind) and checks for
// leftovers; finally the pods' log directory must be empty.
// extraArgs are more agent flags.
func startNode(t *testing.T, kind runtimeKind, extraArgs ...string) *node {
	t.Helper()
	return startNodeLogs(t, filepath.Join(t.TempDir(), "pod-logs"), kind.start, extraArgs...)
}

// startNodeLogs is startNode with the pods' log directory given and the
// runtime's start function.
func startNodeLogs(t *testing.T, logDir string, start func(*testing.T, []string, func()) runtime, extraArgs ...string) *node {
	t.Helper()
	n := &node{t: t, logDir: logDir, manifests: t.TempDir()}
	t.Cleanup(n.checkLogsRemoved)
	n.agentArgs = append(append([]string{"--pod-log-dir=" + n.logDir}, fastAgent...), extraArgs...)
	n.rt = start(t, n.agentArgs, n.deleteAllPods)
	n.client = agentapi.NewClient(n.rt.agentSocket())
	n.waitAgent()
	return n
}

// restartAgent kills the agent (kill -9) and starts it again.
func (n *node) restartAgent() {
	n.t.Helper()
	n.rt.killAgent()
	n.startAgent()
}

// restartAgentWith stops the agent (SIGTERM) and starts it again with
// extra flags after the ones it started with (none: as it started).
func (n *node) restartAgentWith(extra ...string) {
	n.t.Helper()
	n.rt.stopAgent()
	n.rt.setAgentArgs(append(append([]string(nil), n.agentArgs...), extra...))
	n.startAgent()
}

// startAgent starts the agent after killAgent and waits until it answers.
func (n *node) startAgent() {
	n.t.Helper()
	n.rt.startAgent()
	n.waitAgent()
}

// waitAgent waits until the agent lists its pods: it starts after the
// runtime, and answers reads once it has recovered them.
func (n *node) waitAgent() {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.client.ListPods(context.Background(), "")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("the agent on %s does not list its pods after 30s: %v\n%s", n.client.Socket(), err, n.rt.logTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteAllPods stops every watch and deletes every pod through the agent,
// then waits until the agent has removed them all.
func (n *node) deleteAllPods() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if !n.client.Reachable(ctx) {
		n.t.Errorf("cleanup: the agent does not answer; pods are removed through CRI")
		return
	}
	for _, dir := range n.watched {
		_, _ = n.client.Unwatch(ctx, dir) // may have been stopped by the test
	}
	grace := int64(0)
	n.deleteAllWorkloads(ctx, &grace)
	list, err := n.client.ListPods(ctx, "")
	if err != nil {
		n.t.Errorf("cleanup: list pods: %v", err)
		return
	}
	for _, p := range list.Items {
		n.remember(&p)
		if _, err := n.client.Delete(ctx, p.Namespace, p.Name, &grace); err != nil {
			n.t.Logf("cleanup: delete %s: %v", p.Name, err)
		}
	}
	for {
		list, err := n.client.ListPods(ctx, "")
		if err == nil && len(list.Items) == 0 {
			n.checkPodDirsRemoved()
			return
		}
		if ctx.Err() != nil {
			n.t.Errorf("cleanup: the agent still lists %d pods after deleting them all", len(list.Items))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deleteAllWorkloads deletes every CronJob, Job, Deployment, ReplicaSet,
// StatefulSet and DaemonSet, so that no controller makes the pods
// deleteAllPods deletes again, every Service (their host side goes with
// the last) and every claim (Terminating until its pods are gone).
func (n *node) deleteAllWorkloads(ctx context.Context, grace *int64) {
	for _, resource := range []string{agentapi.ResourceCronJob, agentapi.ResourceJob, agentapi.ResourceDeployment, agentapi.ResourceReplicaSet, agentapi.ResourceStatefulSet, agentapi.ResourceDaemonSet, agentapi.ResourceService, agentapi.ResourcePersistentVolumeClaim} {
		list, err := n.client.ListWorkloads(ctx, resource, "")
		if err != nil {
			n.t.Errorf("cleanup: list %s: %v", resource, err)
			continue
		}
		for _, d := range list.Deployments {
			_, _ = n.client.DeleteWorkload(ctx, resource, d.Namespace, d.Name, grace) // gone already if the test deleted it
		}
		for _, ds := range list.DaemonSets {
			_, _ = n.client.DeleteWorkload(ctx, resource, ds.Namespace, ds.Name, grace)
		}
		for _, rs := range list.ReplicaSets {
			_, _ = n.client.DeleteWorkload(ctx, resource, rs.Namespace, rs.Name, grace)
		}
		for _, s := range list.StatefulSets {
			_, _ = n.client.DeleteWorkload(ctx, resource, s.Namespace, s.Name, grace)
		}
		for _, svc := range list.Services {
			_, _ = n.client.DeleteWorkload(ctx, resource, svc.Namespace, svc.Name, grace)
		}
		for _, c := range list.PersistentVolumeClaims {
			_, _ = n.client.DeleteWorkload(ctx, resource, c.Namespace, c.Name, grace)
		}
		for _, j := range list.Jobs {
			_, _ = n.client.DeleteWorkload(ctx, resource, j.Namespace, j.Name, grace)
		}
		for _, cj := range list.CronJobs {
			_, _ = n.client.DeleteWorkload(ctx, resource, cj.Namespace, cj.Name, grace)
		}
	}
}

// remember notes a pod's uid and container ids for the leftover checks.
func (n *node) remember(p *v1.Pod) {
	ids, podUIDs := n.rt.known()
	podUIDs[string(p.UID)] = true
	for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		for _, id := range []string{st.ContainerID, terminatedID(st.LastTerminationState)} {
			if _, raw, ok := strings.Cut(id, "://"); ok {
				ids[raw] = true
			}
		}
	}
}

func terminatedID(s v1.ContainerState) string {
	if s.Terminated == nil {
		return ""
	}
	return s.Terminated.ContainerID
}

// checkPodDirsRemoved fails the test for each pod directory (volumes,
// subPath mounts) and user namespace record the agent kept after deleting
// every pod.
func (n *node) checkPodDirsRemoved() {
	dir := filepath.Join(n.rt.agentRoot(), "agent", "pods")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n.t.Errorf("cleanup: the agent kept pod directory %s after deleting every pod", filepath.Join(dir, e.Name()))
	}
	dir = filepath.Join(n.rt.agentRoot(), "agent", "userns")
	entries, _ = os.ReadDir(dir)
	for _, e := range entries {
		n.t.Errorf("cleanup: the agent kept user namespace record %s after deleting every pod", filepath.Join(dir, e.Name()))
	}
}

func (n *node) checkLogsRemoved() {
	entries, _ := os.ReadDir(n.logDir)
	for _, e := range entries {
		n.t.Errorf("leftover pod log directory %s", filepath.Join(n.logDir, e.Name()))
	}
}

// berthCmd is a berth command with this node's global flags (first, so
// that arguments after "--" stay the command's).
func (n *node) berthCmd(args ...string) *exec.Cmd {
	return exec.Command(filepath.Join(env.BinDir, "berth"), append(n.rt.flags(), args...)...)
}

// berth runs the CLI against this node; it returns stdout, stderr and the
// error of the run.
func (n *node) berth(args ...string) (string, string, error) {
	cmd := n.berthCmd(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs the CLI and fails the test unless it exits 0.
func (n *node) must(args ...string) string {
	n.t.Helper()
	out, errOut, err := n.berth(args...)
	if err != nil {
		n.t.Fatalf("berth %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// write stores a manifest in the test's directory and returns its path.
func (n *node) write(name, yaml string) string {
	n.t.Helper()
	path := filepath.Join(n.manifests, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		n.t.Fatal(err)
	}
	return path
}

// apply sends a manifest with `berth apply -f`.
func (n *node) apply(name, yaml string) string {
	n.t.Helper()
	return n.must("apply", "-f", n.write(name, yaml))
}

// pod returns a pod as the agent reports it.
func (n *node) pod(name string) v1.Pod {
	n.t.Helper()
	detail, err := n.client.DescribePod(context.Background(), "default", name)
	if err != nil {
		n.t.Fatalf("pod %s: %v", name, err)
	}
	n.remember(&detail.Pod)
	return detail.Pod
}

// waitPod polls a pod until cond holds, for up to a minute.
func (n *node) waitPod(name, what string, cond func(v1.Pod) bool) v1.Pod {
	n.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		detail, err := n.client.DescribePod(context.Background(), "default", name)
		if err == nil {
			n.remember(&detail.Pod)
			if cond(detail.Pod) {
				return detail.Pod
			}
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "pod", name)
			n.t.Fatalf("pod %s: timed out waiting until %s (last error %v)\n%s\n%s", name, what, err, desc, n.rt.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exec runs a command in a container with `berth exec`.
func (n *node) exec(pod, container string, cmd ...string) (string, error) {
	out, errOut, err := n.berth(append([]string{"exec", pod, "-c", container, "--"}, cmd...)...)
	if err != nil {
		return out, fmt.Errorf("berth exec %s -c %s %v: %w: %s", pod, container, cmd, err, errOut)
	}
	return out, nil
}

// podList runs `berth get pods -o json`.
func (n *node) podList(args ...string) []v1.Pod {
	n.t.Helper()
	out := n.must(append([]string{"get", "pods", "-o", "json"}, args...)...)
	var list struct {
		Kind  string   `json:"kind"`
		Items []v1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" {
		n.t.Fatalf("get pods -o json: kind %q, %v\n%s", list.Kind, err, out)
	}
	return list.Items
}

func containerStatus(pod v1.Pod, name string) v1.ContainerStatus {
	for _, st := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if st.Name == name {
			return st
		}
	}
	return v1.ContainerStatus{}
}

func condition(pod v1.Pod, typ v1.PodConditionType) v1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func running(name string) func(v1.Pod) bool {
	return func(p v1.Pod) bool {
		st := containerStatus(p, name)
		return st.State.Running != nil
	}
}

func readyPod(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue }

// hasEvent reports whether describe lists an event with reason.
func (n *node) hasEvent(pod, reason string) bool {
	detail, err := n.client.DescribePod(context.Background(), "default", pod)
	if err != nil {
		return false
	}
	for _, e := range detail.Events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// waitExec retries a command in a container until its output satisfies ok.
func (n *node) waitExec(pod, container, what string, ok func(string) bool, cmd ...string) string {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := n.exec(pod, container, cmd...)
		if err == nil && ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s: last output %q, error %v", what, out, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
