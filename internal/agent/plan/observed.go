package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// SortedSandboxes returns a copy of the sandboxes, newest first: highest attempt, then
// latest CreatedAt, then ID.
func (o Observed) SortedSandboxes() []Sandbox {
	out := append([]Sandbox(nil), o.Sandboxes...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Attempt != b.Attempt {
			return a.Attempt > b.Attempt
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.ID > b.ID
	})
	return out
}

// Current returns the newest sandbox (the one containers are started in).
func (o Observed) Current() (Sandbox, bool) {
	sorted := o.SortedSandboxes()
	if len(sorted) == 0 {
		return Sandbox{}, false
	}
	return sorted[0], true
}

// Instances returns every container named name, newest first: latest CreatedAt, then
// highest RestartCount, then ID.
func (o Observed) Instances(name string) []Container {
	var out []Container
	for _, c := range o.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	sortNewestFirst(out)
	return out
}

func sortNewestFirst(cs []Container) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		if a.RestartCount != b.RestartCount {
			return a.RestartCount > b.RestartCount
		}
		return a.ID > b.ID
	})
}

// IsSidecar reports whether c is a restartable init container (restartPolicy: Always).
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// ShouldRestart is the kubelet's ShouldContainerBeRestarted: whether container c, whose
// newest instance is latest (nil = never created), must be started (again). A pod being
// deleted restarts nothing; a missing, created or unknown instance is (re)started under
// any policy; an exited one as ContainerShouldRestart says for its exit code (the
// container's own restartPolicy and rules, else the pod's restartPolicy).
func ShouldRestart(pod *v1.Pod, c *v1.Container, latest *Container) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if latest == nil {
		return true
	}
	switch latest.State {
	case StateRunning:
		return false
	case StateCreated, StateUnknown:
		return true
	}
	return ContainerShouldRestart(c, &pod.Spec, latest.ExitCode)
}

// initFailed is the kubelet's isInitContainerFailed.
func initFailed(c *Container) bool {
	if c.Reason == "OOMKilled" {
		return true
	}
	return (c.State == StateExited && c.ExitCode != 0) || c.State == StateUnknown
}

// view indexes the observed state once for the planner.
type view struct {
	sandboxes []Sandbox              // newest first
	current   string                 // ID of the newest sandbox, "" when none
	byName    map[string][]Container // newest first
}

func newView(o Observed) *view {
	v := &view{sandboxes: o.SortedSandboxes(), byName: map[string][]Container{}}
	if len(v.sandboxes) > 0 {
		v.current = v.sandboxes[0].ID
	}
	for _, c := range o.Containers {
		v.byName[c.Name] = append(v.byName[c.Name], c)
	}
	for _, cs := range v.byName {
		sortNewestFirst(cs)
	}
	return v
}

// newest returns the newest instance named name in any sandbox.
func (v *view) newest(name string) *Container {
	return v.first(name, func(*Container) bool { return true })
}

// newestCurrent returns the newest instance named name in the current sandbox.
func (v *view) newestCurrent(name string) *Container {
	return v.first(name, func(c *Container) bool { return c.SandboxID == v.current })
}

// newestLive returns the newest instance that counts for the current sandbox: any in it,
// or an exited one elsewhere (live ones elsewhere are being killed as OldSandbox).
func (v *view) newestLive(name string) *Container {
	return v.first(name, func(c *Container) bool {
		return c.SandboxID == v.current || c.State == StateExited
	})
}

// newestExited returns the newest exited instance, only in the current sandbox if
// currentOnly.
func (v *view) newestExited(name string, currentOnly bool) *Container {
	return v.first(name, func(c *Container) bool {
		return c.State == StateExited && (!currentOnly || c.SandboxID == v.current)
	})
}

func (v *view) first(name string, ok func(*Container) bool) *Container {
	for i := range v.byName[name] {
		if c := &v.byName[name][i]; ok(c) {
			return c
		}
	}
	return nil
}

// nextRestartCount is 0 for a never-seen name, else the highest count seen plus one.
func (v *view) nextRestartCount(name string) int {
	cs := v.byName[name]
	if len(cs) == 0 {
		return 0
	}
	highest := 0
	for _, c := range cs {
		highest = max(highest, c.RestartCount)
	}
	return highest + 1
}

// live reports whether a container may still be running (anything but exited).
func live(c *Container) bool {
	return c.State != StateExited
}
