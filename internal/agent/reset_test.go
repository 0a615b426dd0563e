package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
)

const restartAllPod = `
apiVersion: v1
kind: Pod
metadata: {name: whole}
spec:
  initContainers:
  - {name: setup, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "0"]}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
  - {name: log, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// app exits 42, its RestartAllContainers rule: log is stopped, every
// instance removed, setup runs again in the same sandbox, and each
// container's restart count moves by one, continuing from its log files.
func TestRestartAllContainersInPlace(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	a := startTestAgentIn(t, rt, dir)
	a.apply(t, restartAllPod)
	waitFor(t, "app and log run", func() bool {
		p := a.pod(t, "whole")
		return ctrStatus(p, "app").State.Running != nil && ctrStatus(p, "log").State.Running != nil
	})
	pod := a.pod(t, "whole")
	if c := podCondition(pod, podstatus.ConditionAllContainersRestarting); c.Status != v1.ConditionFalse {
		t.Errorf("before the exit: %+v; want AllContainersRestarting False", c)
	}
	// The runtime writes each instance's log; the reset keeps them.
	logs := podspec.PodLogDirectory(dir+"/logs", "default", "whole", string(pod.UID))
	for _, name := range []string{"setup", "app", "log"} {
		writeLog(t, filepath.Join(logs, name, "0.log"))
	}
	release := make(chan struct{})
	rt.HoldStop("log", release) // the reset holds while log stops
	if err := rt.Exit("app", 42); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "AllContainersRestarting True while log stops", func() bool {
		c := podCondition(a.pod(t, "whole"), podstatus.ConditionAllContainersRestarting)
		return c.Status == v1.ConditionTrue && c.Reason == podstatus.ReasonRestartAllContainersStarted
	})
	close(release)
	waitFor(t, "everything restarted once", func() bool {
		p := a.pod(t, "whole")
		app, log := ctrStatus(p, "app"), ctrStatus(p, "log")
		setup := p.Status.InitContainerStatuses[0]
		return app.State.Running != nil && app.RestartCount == 1 && log.State.Running != nil && log.RestartCount == 1 &&
			setup.RestartCount == 1 && setup.State.Terminated != nil
	})
	calls := rt.Calls()
	if n := countCalls(calls, "start setup"); n != 2 {
		t.Errorf("setup started %d times; want 2 (the init containers run again)", n)
	}
	if n := countCalls(calls, "runp"); n != 1 {
		t.Errorf("%d sandboxes made; want 1 (the sandbox is kept): %v", n, calls)
	}
	if !slices.Contains(calls, "stop log") {
		t.Errorf("log was not stopped: %v", calls)
	}
	if sandboxes, containers := rt.Counts(); sandboxes != 1 || containers != 3 {
		t.Errorf("the runtime holds %d sandboxes and %d containers; want 1 and 3 (the old instances removed)", sandboxes, containers)
	}
	for _, name := range []string{"setup", "app", "log"} {
		for _, cfg := range rt.ContainerConfigs(name) {
			if got := cfg.GetMetadata().GetAttempt(); got != 1 || cfg.GetLogPath() != name+"/1.log" {
				t.Errorf("%s: new instance attempt %d, log %s; want 1, %s/1.log (after 0.log)", name, got, cfg.GetLogPath(), name)
			}
		}
		if _, err := os.Stat(filepath.Join(logs, name, "0.log")); err != nil {
			t.Errorf("%s's log of the removed instance: %v; want kept", name, err)
		}
	}
	pod = a.pod(t, "whole")
	if last := ctrStatus(pod, "log").LastTerminationState.Terminated; last == nil || last.Reason != podstatus.ReasonRestartingAllContainers {
		t.Errorf("log's last termination %+v; want %s", last, podstatus.ReasonRestartingAllContainers)
	}
	if c := podCondition(pod, podstatus.ConditionAllContainersRestarting); c.Status != v1.ConditionFalse || c.LastTransitionTime.IsZero() {
		t.Errorf("after the restart: %+v; want False again", c)
	}
	if pod.Status.Phase != v1.PodRunning || podCondition(pod, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Errorf("phase %s, Initialized %+v", pod.Status.Phase, podCondition(pod, v1.PodInitialized))
	}
	if !a.hasEvent(t, "whole", "RestartAllContainers", "container app exited with code 42") {
		t.Errorf("no RestartAllContainers event")
	}
}

// A container with restartPolicy Never in an Always pod stays exited; one
// with a Restart rule on 42 is restarted only after exiting 42.
func TestContainerRestartPolicyAndRules(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: rules}
spec:
  restartPolicy: Always
  containers:
  - {name: once, image: busybox, imagePullPolicy: IfNotPresent, command: [exit, "1"], restartPolicy: Never}
  - name: picky
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    restartPolicy: Never
    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]
  - {name: keeper, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`)
	waitFor(t, "picky runs, once exited", func() bool {
		p := a.pod(t, "rules")
		return ctrStatus(p, "picky").State.Running != nil && ctrStatus(p, "once").State.Terminated != nil
	})
	if err := rt.Exit("picky", 42); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "picky restarted after exit 42", func() bool {
		st := ctrStatus(a.pod(t, "rules"), "picky")
		return st.State.Running != nil && st.RestartCount == 1
	})
	if err := rt.Exit("picky", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "picky exited 1", func() bool { return ctrStatus(a.pod(t, "rules"), "picky").State.Terminated != nil })
	time.Sleep(500 * time.Millisecond) // past the test back-off (100-400 ms) and a few relists
	p := a.pod(t, "rules")
	if once, picky := ctrStatus(p, "once"), ctrStatus(p, "picky"); once.RestartCount != 0 || once.State.Terminated == nil ||
		picky.RestartCount != 1 || picky.State.Terminated == nil || picky.State.Terminated.ExitCode != 1 {
		t.Errorf("once %+v, picky %+v; want both exited, not restarted again", once.State, picky.State)
	}
	if n := countCalls(rt.Calls(), "start once"); n != 1 {
		t.Errorf("once started %d times; want 1", n)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s; want Running (keeper runs)", p.Status.Phase)
	}
}

func writeLog(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func countCalls(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call || strings.HasPrefix(c, call+" ") {
			n++
		}
	}
	return n
}

func TestRestartCountFromLogs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"0.log", "3.log.20250301-100000", "2.log.20250301-090000.gz", "notes.txt", "x7.log"} {
		writeLog(t, filepath.Join(dir, name))
	}
	start := plan.Start{Name: "app"}
	if got := restartCount(start, plan.Observed{}, dir); got != 4 {
		t.Errorf("from the logs: %d; want 4 (after 3.log, rotated)", got)
	}
	seen := plan.Observed{Containers: []plan.Container{{ID: "c", Name: "app", RestartCount: 0, State: plan.StateExited}}}
	if got := restartCount(plan.Start{Name: "app", RestartCount: 0}, seen, dir); got != 0 {
		t.Errorf("with an instance in the runtime the plan's count stands: %d", got)
	}
	if got := restartCount(start, plan.Observed{}, filepath.Join(dir, "none")); got != 0 {
		t.Errorf("without a log directory: %d; want 0", got)
	}
}
