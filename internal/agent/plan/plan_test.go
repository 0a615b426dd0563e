package plan

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current planner")

func allScenarios() []scenario {
	return slices.Concat(sandboxScenarios(), initScenarios(), regularScenarios(), ruleScenarios(), restartAllScenarios())
}

func (sc scenario) input() Input {
	return Input{
		Pod:      sc.pod,
		Observed: completeObserved(sc.pod, sc.obs),
		Probes:   sc.probes,
		Backoff:  sc.backoff,
		Hash:     testHash,
		Now:      now,
	}
}

// render is what a golden file holds: the scenario's description, then the plan.
func (sc scenario) render() string {
	return "# " + sc.desc + "\n" + Compute(sc.input()).String()
}

func TestComputeGolden(t *testing.T) {
	scenarios := allScenarios()
	if len(scenarios) < 30 {
		t.Fatalf("only %d scenarios", len(scenarios))
	}
	seen := map[string]bool{}
	for _, sc := range scenarios {
		if seen[sc.name] {
			t.Fatalf("duplicate scenario %q", sc.name)
		}
		seen[sc.name] = true
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join("testdata", sc.name+".golden")
			got := sc.render()
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("plan differs from %s\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".golden"); !seen[name] {
			t.Errorf("%s has no scenario", f)
		}
	}
}

// The plan must not depend on the order in which the runtime lists things.
func TestComputeIgnoresListingOrder(t *testing.T) {
	for _, sc := range allScenarios() {
		in := sc.input()
		want := Compute(in).String()
		in.Observed.Containers = slices.Clone(in.Observed.Containers)
		in.Observed.Sandboxes = slices.Clone(in.Observed.Sandboxes)
		slices.Reverse(in.Observed.Containers)
		slices.Reverse(in.Observed.Sandboxes)
		if got := Compute(in).String(); got != want {
			t.Errorf("%s: reversed listing changes the plan\n--- got\n%s--- want\n%s", sc.name, got, want)
		}
	}
}

func TestComputeFields(t *testing.T) {
	byName := map[string]scenario{}
	for _, sc := range allScenarios() {
		byName[sc.name] = sc
	}
	plan := func(name string) Actions { return Compute(byName[name].input()) }

	fresh := plan("fresh_pod")
	if !fresh.CreateSandbox || fresh.Attempt != 0 || fresh.KillPod || fresh.SandboxID != "" {
		t.Errorf("fresh pod: %+v", fresh)
	}
	dead := plan("sandbox_dead_always")
	if !dead.KillPod || !dead.CreateSandbox || dead.Attempt != 1 || dead.Done {
		t.Errorf("dead sandbox: %+v", dead)
	}
	if len(dead.InitToStart) != 1 || dead.InitToStart[0].Name != "setup" || len(dead.ContainersToStart) != 0 {
		t.Errorf("dead sandbox starts: %+v", dead)
	}
	done := plan("sandbox_dead_never_done")
	if !done.Done || done.CreateSandbox || !done.KillPod {
		t.Errorf("never, dead sandbox: %+v", done)
	}
	wait := plan("backoff_pending")
	if wait.KillPod || wait.Done || len(wait.Waits) != 1 || len(wait.ContainersToStart) != 0 {
		t.Fatalf("back-off: %+v", wait)
	}
	w := wait.Waits[0]
	if w.Reason != ReasonCrashLoopBackOff || !w.Until.Equal(now.Add(15*time.Second)) ||
		w.Message != "back-off 20s restarting failed container=app pod=web_default(uid-1)" {
		t.Errorf("wait: %+v", w)
	}
	restart := plan("regular_exit1_always")
	if len(restart.ContainersToStart) != 1 || restart.ContainersToStart[0].RestartCount != 4 ||
		restart.ContainersToStart[0].Reason != StartRestart || restart.SandboxID != "sb0" {
		t.Errorf("restart: %+v", restart)
	}
	steady := plan("steady_running")
	if steady.Changes() {
		t.Errorf("steady pod has changes: %+v", steady)
	}
}

func TestComputeWithoutHashFunction(t *testing.T) {
	pod := newPod(always, nil, ctr("app"))
	obs := observed(sandboxes(sb("sb0", 0, true)), withHash(running("c-app", "sb0", "app", 0, 1), "anything"))
	acts := Compute(Input{Pod: pod, Observed: obs, Now: now})
	if acts.Changes() {
		t.Errorf("nil Hash must disable spec-change detection: %s", acts)
	}
}

func TestSandboxChanged(t *testing.T) {
	pod := newPod(always, nil, ctr("app"))
	cases := []struct {
		name    string
		sbs     []Sandbox
		want    SandboxDecision
		network bool
	}{
		{"none", nil, SandboxDecision{Recreate: true, Reason: PodSandboxMissing}, false},
		{"ready", sandboxes(sb("a", 3, true)), SandboxDecision{Attempt: 3, Current: "a"}, false},
		{"not ready", sandboxes(sb("a", 3, false)),
			SandboxDecision{Recreate: true, Reason: PodSandboxNotReady, Attempt: 4, Current: "a"}, false},
		{"older ready", sandboxes(sb("a", 1, true), sb("b", 2, false)),
			SandboxDecision{Recreate: true, Reason: PodSandboxNotReady, Attempt: 3, Current: "b"}, false},
		{"two ready", sandboxes(sb("a", 1, true), sb("b", 2, true)),
			SandboxDecision{Recreate: true, Reason: PodSandboxMultipleReady, Attempt: 3, Current: "b"}, false},
		{"host network", sandboxes(sb("a", 0, true)),
			SandboxDecision{Recreate: true, Reason: PodSandboxNetworkChanged, Attempt: 1, Current: "a"}, true},
	}
	for _, tc := range cases {
		p := pod.DeepCopy()
		p.Spec.HostNetwork = tc.network
		if got := SandboxChanged(p, Observed{Sandboxes: tc.sbs}); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestShouldRestart(t *testing.T) {
	exit := func(code int32) *Container { c := exited("c", "s", "app", code, 0, 1); return &c }
	run := running("c", "s", "app", 0, 1)
	cases := []struct {
		policy v1.RestartPolicy
		last   *Container
		want   bool
	}{
		{never, nil, true}, {never, exit(0), false}, {never, exit(1), false},
		{onFailure, exit(0), false}, {onFailure, exit(1), true}, {onFailure, exit(-1), true},
		{always, exit(0), true}, {"", exit(0), true}, {always, &run, false},
		{never, &Container{State: StateCreated}, true}, {never, &Container{State: StateUnknown}, true},
	}
	for i, tc := range cases {
		pod := newPod(tc.policy, nil, ctr("app"))
		if got := ShouldRestart(pod, &pod.Spec.Containers[0], tc.last); got != tc.want {
			t.Errorf("case %d (%s, %+v): got %v", i, tc.policy, tc.last, got)
		}
	}
}
