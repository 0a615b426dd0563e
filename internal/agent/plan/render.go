package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// String renders the plan, one action per line, in the order the executor applies it.
// The format is stable (golden tests and `berth describe` events depend on it):
//
//	use sandbox <id>
//	restart all: <reason>
//	reset <type> <name> <id>: kill and remove|remove[, source]
//	kill pod: <reason>
//	kill <type> <name> <id>: <reason>: <message>
//	stop sandbox <id>
//	create sandbox attempt <n>
//	start <type> <name> restartCount=<n>: <reason>
//	wait <type> <name> until <RFC 3339 UTC>: <reason>: <message>
//	done: <reason>
//
// A plan that changes nothing renders "use sandbox <id>" followed by "no changes".
func (a Actions) String() string {
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	if a.SandboxID != "" {
		line("use sandbox %s", a.SandboxID)
	}
	if a.RestartAll != "" {
		line("restart all: %s", a.RestartAll)
	}
	for _, r := range a.ContainersToReset {
		what := "remove"
		if r.Kill {
			what = "kill and remove"
		}
		if r.Source {
			what += ", source"
		}
		line("reset %s %s %s: %s", r.Type, r.Name, r.ID, what)
	}
	if a.KillPod {
		line("kill pod: %s", a.KillPodReason)
	}
	for _, k := range a.ContainersToKill {
		line("kill %s %s %s: %s: %s", k.Type, k.Name, k.ID, k.Reason, k.Message)
	}
	for _, id := range a.StopSandboxes {
		line("stop sandbox %s", id)
	}
	if a.CreateSandbox {
		line("create sandbox attempt %d", a.Attempt)
	}
	for _, s := range append(append([]Start(nil), a.InitToStart...), a.ContainersToStart...) {
		line("start %s %s restartCount=%d: %s", s.Type, s.Name, s.RestartCount, s.Reason)
	}
	for _, w := range a.Waits {
		line("wait %s %s until %s: %s: %s", w.Type, w.Name, w.Until.UTC().Format(time.RFC3339), w.Reason, w.Message)
	}
	if a.Done {
		line("done: %s", a.DoneReason)
	}
	if !a.Changes() {
		line("no changes")
	}
	return b.String()
}

// Changes reports whether the plan asks the executor to do anything.
func (a Actions) Changes() bool {
	return a.KillPod || a.CreateSandbox || a.Done || len(a.ContainersToKill) > 0 || len(a.ContainersToReset) > 0 ||
		len(a.InitToStart) > 0 || len(a.ContainersToStart) > 0 || len(a.Waits) > 0
}

// sortActions puts every list in spec order (init containers, then regular, then
// ephemeral; names not in the spec last), ties broken by container ID.
func (p *planner) sortActions() {
	rank := specRank(p.pod)
	kills := p.acts.ContainersToKill
	sort.SliceStable(kills, func(i, j int) bool {
		if ri, rj := rank(kills[i].Name), rank(kills[j].Name); ri != rj {
			return ri < rj
		}
		return kills[i].ID < kills[j].ID
	})
	for _, starts := range [][]Start{p.acts.InitToStart, p.acts.ContainersToStart} {
		sort.SliceStable(starts, func(i, j int) bool { return rank(starts[i].Name) < rank(starts[j].Name) })
	}
	waits := p.acts.Waits
	sort.SliceStable(waits, func(i, j int) bool { return rank(waits[i].Name) < rank(waits[j].Name) })
}

// specRank returns a function giving every container name of the pod its position:
// init containers, then regular containers, then ephemeral containers, then any other
// name.
func specRank(pod *v1.Pod) func(name string) int {
	order := map[string]int{}
	add := func(name string) {
		if _, ok := order[name]; !ok {
			order[name] = len(order)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.Name)
	}
	for _, c := range pod.Spec.Containers {
		add(c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.Name)
	}
	return func(name string) int {
		if r, ok := order[name]; ok {
			return r
		}
		return len(order)
	}
}
