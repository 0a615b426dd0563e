package containerd

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
)

// fastAgent shortens the agent's back-off, relist and rescan periods so
// that the test stays quick.
var fastAgent = []string{
	"--backoff-initial=500ms", "--backoff-max=4s", "--backoff-reset=1m",
	"--relist-period=1s", "--watch-interval=500ms",
}

// berthRoot and berthState are the agent's --root and --state.
func (e *env) berthRoot() string  { return filepath.Join(e.root, "berth") }
func (e *env) berthState() string { return filepath.Join(e.state, "berth") }

// globalFlags point every berth command at the test's agent and
// containerd.
func (e *env) globalFlags() []string {
	return []string{
		"--config", e.berthConf, "--root", e.berthRoot(), "--state", e.berthState(),
		"--runtime-endpoint", e.ctrd.endpoint(), "--log-level", "debug",
	}
}

// startAgent starts `berth agent` on containerd's socket and waits until
// the berth CLI reaches it.
func (e *env) startAgent(t *testing.T) {
	t.Helper()
	args := append(append([]string{filepath.Join(e.binDir, "berth")}, e.globalFlags()...), "agent", "--pod-log-dir", e.podLogDir)
	e.agent.argv = append(args, fastAgent...)
	if err := e.agent.start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, errOut, err := e.berth("get", "pods", "-A", "-o", "json")
		if err == nil {
			return
		}
		if !e.agent.running() || time.Now().After(deadline) {
			t.Fatalf("the agent does not answer (running %v): %v: %s\n%s", e.agent.running(), err, errOut, e.agent.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopAgent stops the agent with SIGTERM; it must exit cleanly.
func (e *env) stopAgent(t *testing.T) {
	t.Helper()
	if err := e.agent.stop(20 * time.Second); err != nil {
		t.Errorf("%v\n%s", err, e.agent.logTail(30))
	}
}

// berth runs the CLI with the test's global flags (first, so that what
// follows "--" stays the command's) and returns stdout, stderr and the
// error of the run.
func (e *env) berth(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "berth"), append(e.globalFlags(), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// mustBerth runs the CLI and fails the test unless it exits 0.
func (e *env) mustBerth(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := e.berth(args...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// apply writes a manifest into the test's directory and sends it with
// `berth apply -f`.
func (e *env) apply(t *testing.T, name, manifest string) string {
	t.Helper()
	path := filepath.Join(e.tmp, name)
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return e.mustBerth(t, "apply", "-f", path)
}

// listPods runs `berth get pods -A -o json`.
func (e *env) listPods() ([]v1.Pod, error) {
	out, errOut, err := e.berth("get", "pods", "-A", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("berth get pods: %w: %s", err, errOut)
	}
	var list struct {
		Kind  string   `json:"kind"`
		Items []v1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" {
		return nil, fmt.Errorf("berth get pods -o json: kind %q, %v:\n%s", list.Kind, err, out)
	}
	for i := range list.Items {
		e.seen.pod(&list.Items[i])
	}
	return list.Items, nil
}

// findPod returns the pod of that name in the default namespace.
func findPod(pods []v1.Pod, name string) (v1.Pod, bool) {
	for _, p := range pods {
		if p.Namespace == "default" && p.Name == name {
			return p, true
		}
	}
	return v1.Pod{}, false
}

// waitPod polls `berth get pods` until the named pod satisfies cond, for
// up to a minute.
func (e *env) waitPod(t *testing.T, name, what string, cond func(v1.Pod) bool) v1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := e.listPods()
		pod, found := findPod(pods, name)
		if err == nil && found && cond(pod) {
			return pod
		}
		if time.Now().After(deadline) {
			desc, _, _ := e.berth("describe", "pod", name)
			status, _ := json.MarshalIndent(pod.Status, "", "  ")
			t.Fatalf("pod %s: timed out waiting until %s (found %v, error %v)\nstatus: %s\n%s\n%s",
				name, what, found, err, status, desc, e.agent.logTail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// containerStatus finds a container's status among the init and regular
// ones.
func containerStatus(pod v1.Pod, name string) (v1.ContainerStatus, bool) {
	for _, st := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if st.Name == name {
			return st, true
		}
	}
	return v1.ContainerStatus{}, false
}

// condition is the status of a pod condition, "" when absent.
func condition(pod v1.Pod, typ v1.PodConditionType) v1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// rawID drops the "<runtime>://" prefix of a status container id.
func rawID(id string) string {
	if _, raw, ok := strings.Cut(id, "://"); ok {
		return raw
	}
	return id
}
