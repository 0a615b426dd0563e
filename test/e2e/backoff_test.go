package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A crashing container is restarted with growing delays (500 ms doubling
// here), shows CrashLoopBackOff in between, and keeps its last exit in
// lastState. Each run notes its start (the host's uptime) in a hostPath
// file, so the delays are measured where they happen.
func TestCrashingContainerRestartsWithGrowingBackOff(t *testing.T) {
	onEachRuntime(t, crashingContainerRestartsWithGrowingBackOff)
}

func crashingContainerRestartsWithGrowingBackOff(t *testing.T, n *node) {
	hostDir := t.TempDir()
	writeFile(t, filepath.Join(hostDir, "starts"), "")
	n.apply("crash.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  volumes: [{name: host, hostPath: {path: `+hostDir+`}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo run $(wc -l < /host/starts); cut -d' ' -f1 /proc/uptime >> /host/starts; exit 3"]
    volumeMounts: [{name: host, mountPath: /host}]
`)
	sawBackOff := false
	n.waitPod("crash", "four restarts", func(p v1.Pod) bool {
		st := containerStatus(p, "app")
		if w := st.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		return st.RestartCount >= 4
	})
	if !sawBackOff {
		t.Errorf("the container never waited in CrashLoopBackOff")
	}
	starts := readStarts(t, filepath.Join(hostDir, "starts"))
	// Restart 1 is immediate; then 0.5 s, 1 s, 2 s.
	for i, want := range []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second} {
		gap := starts[i+1] - starts[i]
		if gap < want*9/10 || gap > 2*want+3*time.Second {
			t.Errorf("restart %d came %v after the run before; want the back-off of %v (starts %v)", i+1, gap, want, starts)
		}
	}
	st := containerStatus(n.pod("crash"), "app")
	if last := st.LastTerminationState.Terminated; last == nil || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("lastState %+v; want terminated, Error, exit code 3", st.LastTerminationState)
	}
	// The log of the latest run, and (--previous) of the last terminated
	// one: the same instance while the container waits in back-off.
	current, previous := n.must("logs", "crash"), n.must("logs", "crash", "--previous")
	if !strings.HasPrefix(current, "run ") || !strings.HasPrefix(previous, "run ") {
		t.Errorf("logs %q, --previous %q; want a run's line from each", current, previous)
	}
	if !n.hasEvent("crash", "BackOff") {
		t.Errorf("no BackOff event")
	}
	n.waitPod("crash", "CrashLoopBackOff shown by get pods", func(v1.Pod) bool {
		return strings.Contains(n.must("get", "pods", "crash"), "CrashLoopBackOff")
	})
}

// readStarts reads the uptimes (seconds with two decimals) a container
// noted at each start.
func readStarts(t *testing.T, path string) []time.Duration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for _, f := range strings.Fields(string(data)) {
		s, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("start %q: %v", f, err)
		}
		out = append(out, time.Duration(s*float64(time.Second)))
	}
	if len(out) < 5 {
		t.Fatalf("%d starts noted; want 5", len(out))
	}
	return out
}
