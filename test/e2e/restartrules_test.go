package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// lines counts the lines of a file the pod's containers append to.
func lines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// A container with restartPolicy Never in an Always pod stays exited; a
// container with restartPolicy Never and a Restart rule on exit code 42
// is restarted after exiting 42, not after exiting 7 (KEP-5307).
func TestContainerRestartRules(t *testing.T) { onEachRuntime(t, containerRestartRules) }

func containerRestartRules(t *testing.T, n *node) {
	host := t.TempDir()
	for _, f := range []string{"once", "picky"} {
		writeFile(t, filepath.Join(host, f), "")
	}
	n.apply("rules.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: rules}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  volumes: [{name: host, hostPath: {path: `+host+`}}]
  containers:
  - name: once
    image: busybox
    imagePullPolicy: IfNotPresent
    restartPolicy: Never
    command: [sh, -c, "echo run >> /host/once; exit 3"]
    volumeMounts: [{name: host, mountPath: /host}]
  - name: picky
    image: busybox
    imagePullPolicy: IfNotPresent
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    # the first run exits 42 (restarted), the second 7 (not)
    command: [sh, -c, "echo run >> /host/picky; if [ $(wc -l < /host/picky) -eq 1 ]; then exit 42; fi; exit 7"]
    volumeMounts: [{name: host, mountPath: /host}]
  - {name: keeper, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`)
	n.waitPod("rules", "picky exited 7 after one restart, once exited 3", func(p v1.Pod) bool {
		picky, once := containerStatus(p, "picky"), containerStatus(p, "once")
		return picky.RestartCount == 1 && picky.State.Terminated != nil && picky.State.Terminated.ExitCode == 7 &&
			once.State.Terminated != nil && once.State.Terminated.ExitCode == 3
	})
	time.Sleep(5 * time.Second) // past the back-off (0.5 s to 4 s here) and several relists
	p := n.pod("rules")
	picky, once := containerStatus(p, "picky"), containerStatus(p, "once")
	if once.RestartCount != 0 || once.State.Terminated == nil || lines(t, filepath.Join(host, "once")) != 1 {
		t.Errorf("once (restartPolicy Never in an Always pod): %+v, %d runs; want exited once, never restarted",
			once.State, lines(t, filepath.Join(host, "once")))
	}
	if picky.RestartCount != 1 || picky.State.Terminated == nil || lines(t, filepath.Join(host, "picky")) != 2 {
		t.Errorf("picky (Restart on 42): %+v, restarts %d, %d runs; want restarted after 42 only: 2 runs",
			picky.State, picky.RestartCount, lines(t, filepath.Join(host, "picky")))
	}
	if last := picky.LastTerminationState.Terminated; last == nil || last.ExitCode != 42 {
		t.Errorf("picky's last termination %+v; want exit 42", picky.LastTerminationState)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s; want Running (keeper runs)", p.Status.Phase)
	}
	// The API server's validation, with the field's path.
	_, errOut, err := n.berth("apply", "-f", n.write("bad.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - name: app
    image: busybox
    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [1]}}]
`))
	if err == nil || !strings.Contains(errOut, "spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used") {
		t.Errorf("rules without restartPolicy: %v %q; want refused", err, errOut)
	}
}

// app exits 42, matching its RestartAllContainers rule: every container of
// the pod is restarted in place (KEP-5532) — log is killed, setup (an init
// container) runs again, all in the same sandbox, each restart count one
// higher — and AllContainersRestarting is False again at the end.
func TestRestartAllContainers(t *testing.T) { onEachRuntime(t, restartAllContainers) }

func restartAllContainers(t *testing.T, n *node) {
	host := t.TempDir()
	for _, f := range []string{"setup", "app", "log"} {
		writeFile(t, filepath.Join(host, f), "")
	}
	n.apply("all.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: all}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: host, hostPath: {path: `+host+`}}]
  initContainers:
  - name: setup
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo run >> /host/setup"]
    volumeMounts: [{name: host, mountPath: /host}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
    # the first run waits for log, then exits 42; the next one stays
    command: [sh, -c, "echo run >> /host/app; if [ $(wc -l < /host/app) -eq 1 ]; then until [ -s /host/log ]; do sleep 0.2; done; exit 42; fi; exec sleep 3600"]
    volumeMounts: [{name: host, mountPath: /host}]
  - name: log
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo run >> /host/log; exec sleep 3600"]
    volumeMounts: [{name: host, mountPath: /host}]
`)
	first := n.waitPod("all", "setup done once", func(p v1.Pod) bool { return containerStatus(p, "setup").State.Terminated != nil })
	uid := map[string]string{"io.kubernetes.pod.uid": string(first.UID)}
	before, _ := n.criObjects(uid)
	p := n.waitPod("all", "every container restarted once, app and log running", func(p v1.Pod) bool {
		setup, app, log := containerStatus(p, "setup"), containerStatus(p, "app"), containerStatus(p, "log")
		return setup.RestartCount == 1 && setup.State.Terminated != nil && app.RestartCount == 1 && app.State.Running != nil &&
			log.RestartCount == 1 && log.State.Running != nil
	})
	for _, f := range []string{"setup", "app", "log"} {
		if got := lines(t, filepath.Join(host, f)); got != 2 {
			t.Errorf("%s ran %d times; want 2", f, got)
		}
	}
	after, containers := n.criObjects(uid)
	if len(before) != 1 || len(after) != 1 || after[0].GetId() != before[0].GetId() {
		t.Errorf("sandboxes before %d, after %d (same: %v); want the one sandbox kept", len(before), len(after),
			len(before) == 1 && len(after) == 1 && after[0].GetId() == before[0].GetId())
	}
	if len(containers) != 3 {
		t.Errorf("the runtime holds %d containers of the pod; want 3 (the old instances removed)", len(containers))
	}
	if last := containerStatus(p, "log").LastTerminationState.Terminated; last == nil || last.Reason != "RestartingAllContainers" {
		t.Errorf("log's last termination %+v; want RestartingAllContainers", containerStatus(p, "log").LastTerminationState)
	}
	if c := condition(p, "AllContainersRestarting"); c != v1.ConditionFalse {
		t.Errorf("AllContainersRestarting %q at the end; want False", c)
	}
	if p.Status.Phase != v1.PodRunning || condition(p, v1.PodInitialized) != v1.ConditionTrue {
		t.Errorf("phase %s, Initialized %s; want Running, True", p.Status.Phase, condition(p, v1.PodInitialized))
	}
	if !n.hasEvent("all", "RestartAllContainers") {
		t.Errorf("no RestartAllContainers event")
	}
	// The removed instances' logs are kept; the new ones continue after them.
	for _, f := range []string{"setup/0.log", "app/0.log", "log/0.log", "log/1.log"} {
		if _, err := os.Stat(filepath.Join(n.logDir, "default_all_"+string(first.UID), f)); err != nil {
			t.Errorf("log file %s: %v", f, err)
		}
	}
}

// With --max-container-restart-period=2s (kubelet's crashLoopBackOff.
// maxContainerRestartPeriod) and kubelet's own first delay of 10 s, a
// crashing container is restarted about every 2 s, not after 10 s, 20 s...
func TestMaxContainerRestartPeriod(t *testing.T) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) {
		n := start("--backoff-initial=10s", "--backoff-max=5m", "--max-container-restart-period=2s")
		maxContainerRestartPeriod(t, n)
	})
}

func maxContainerRestartPeriod(t *testing.T, n *node) {
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "starts"), "")
	n.apply("crash.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: host, hostPath: {path: `+host+`}}]
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "cut -d' ' -f1 /proc/uptime >> /host/starts; exit 1"]
    volumeMounts: [{name: host, mountPath: /host}]
`)
	sawCap := false
	n.waitPod("crash", "five restarts", func(p v1.Pod) bool {
		st := containerStatus(p, "app")
		if w := st.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" && strings.Contains(w.Message, "back-off 2s") {
			sawCap = true
		}
		return st.RestartCount >= 5
	})
	starts := readStarts(t, filepath.Join(host, "starts"))
	// Restart 1 is immediate; the others wait the capped back-off. Without
	// the flag the second would wait 10 s.
	for i := 2; i < len(starts); i++ {
		if gap := starts[i] - starts[i-1]; gap < time.Second || gap > 6*time.Second {
			t.Errorf("restart %d came %v after the run before; want about 2s (starts %v)", i, gap, starts)
		}
	}
	if !sawCap {
		t.Errorf("never saw CrashLoopBackOff with back-off 2s")
	}
}
