package plan

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// initScan carries the state of planInit's backward walk over the init containers.
type initScan struct {
	toStart     []int // indexes into spec.initContainers, in discovery (reverse) order
	initialized bool  // every init container has done its part
	previous    bool  // an init container at or after the current index was seen
	failed      string
}

// planInit is the kubelet's computeInitContainerActions. Only instances in the current
// sandbox count (the kubelet purges init containers when it replaces a sandbox). It walks
// the init containers from the last one back: the last one with an instance is the
// frontier; before it only sidecars are looked at, to keep them running. It returns
// whether the pod is initialized, and the name of an init container that failed under
// its restart policy (its own, else the pod's) and rules (the pod is then done).
func (p *planner) planInit() (initialized bool, failed string) {
	specs := p.pod.Spec.InitContainers
	if len(specs) == 0 {
		return true, ""
	}
	s := &initScan{initialized: p.regularStartedInCurrent()}
	s.previous = s.initialized
	for i := len(specs) - 1; i >= 0; i-- {
		p.scanInit(s, i)
		if s.failed != "" {
			return false, s.failed
		}
	}
	if !s.previous {
		s.toStart = append(s.toStart, 0)
	}
	for j := len(s.toStart) - 1; j >= 0; j-- {
		c := &specs[s.toStart[j]]
		p.schedule(c, initType(c), p.v.newestExited(c.Name, true), &p.acts.InitToStart)
	}
	return s.initialized, ""
}

// scanInit looks at init container i.
func (p *planner) scanInit(s *initScan, i int) {
	c := &p.pod.Spec.InitContainers[i]
	sidecar := IsSidecar(c)
	last := p.v.newestCurrent(c.Name)
	if last == nil {
		// Its instance is gone (or it never ran): a sidecar after initialization is
		// restarted; anything else waits for its turn.
		if s.previous && sidecar {
			s.toStart = append(s.toStart, i)
		}
		return
	}
	if s.previous && !sidecar {
		return // after initialization only sidecars are kept running
	}
	switch last.State {
	case StateCreated:
		p.killBeforeRestart(last, "Init container")
		s.toStart = append(s.toStart, i)
	case StateRunning:
		if sidecar {
			p.runningSidecar(s, i, last)
		}
	case StateExited:
		switch {
		case sidecar:
			s.toStart = append(s.toStart, i)
		case initFailed(last) && !ShouldRestart(p.pod, c, last):
			s.failed = c.Name
		case initFailed(last):
			s.toStart = append(s.toStart, i)
		default:
			p.initCompleted(s, i)
		}
	default:
		if !sidecar && !restartsAfterKill(c, p.pod) {
			s.failed = c.Name
			return
		}
		p.killBeforeRestart(last, "Init container")
		s.toStart = append(s.toStart, i)
	}
	s.previous = true
}

// runningSidecar handles a running restartable init container: it counts as done once
// started (startup probe succeeded, if it has one); it is restarted when its startup or
// liveness probe failed or its spec changed.
func (p *planner) runningSidecar(s *initScan, i int, last *Container) {
	c := &p.pod.Spec.InitContainers[i]
	probe := p.probe(c.Name, last.ID)
	if c.StartupProbe != nil {
		if probe.StartupFailed {
			p.kill(last, KillStartupProbe, fmt.Sprintf("Init container %s failed startup probe", c.Name))
			s.toStart = append(s.toStart, i)
			return
		}
		if !probe.Started {
			return // wait for the startup probe before the next init container
		}
	}
	if !s.previous {
		p.initCompleted(s, i)
	}
	switch {
	case p.hashChanged(c, last):
		p.kill(last, KillSpecChanged, fmt.Sprintf("Init container %s spec hash changed", c.Name))
		s.toStart = append(s.toStart, i)
	case probe.LivenessFailed:
		p.kill(last, KillLivenessProbe, fmt.Sprintf("Init container %s failed liveness probe", c.Name))
		s.toStart = append(s.toStart, i)
	}
}

// initCompleted records that init container i did its part: the pod is initialized if
// it is the last one, else the next one starts.
func (p *planner) initCompleted(s *initScan, i int) {
	if i == len(p.pod.Spec.InitContainers)-1 {
		s.initialized = true
		return
	}
	s.toStart = append(s.toStart, i+1)
}

// regularStartedInCurrent reports whether a regular container has a created or running
// instance in the current sandbox: then the pod was initialized before, even if init
// containers have been removed since. Exited instances do not count: they may come from
// an older sandbox.
func (p *planner) regularStartedInCurrent() bool {
	for _, c := range p.pod.Spec.Containers {
		last := p.v.newestCurrent(c.Name)
		if last != nil && (last.State == StateCreated || last.State == StateRunning) {
			return true
		}
	}
	return false
}

func initType(c *v1.Container) ContainerType {
	if IsSidecar(c) {
		return TypeSidecar
	}
	return TypeInit
}

// specType finds the type of the container named name in the pod spec.
func specType(pod *v1.Pod, name string) ContainerType {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			return initType(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return TypeRegular
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return TypeEphemeral
		}
	}
	return ""
}
