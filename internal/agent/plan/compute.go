package plan

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// planner holds one Compute call's state.
type planner struct {
	in     Input
	pod    *v1.Pod
	v      *view
	acts   Actions
	killed map[string]bool // IDs already in acts.ContainersToKill
}

// Compute plans one sync of in.Pod: the kubelet's computePodActions. It is pure and
// deterministic; see the package documentation for the rules.
func Compute(in Input) Actions {
	p := &planner{in: in, pod: in.Pod, v: newView(in.Observed), killed: map[string]bool{}}
	p.compute()
	p.sortActions()
	return p.acts
}

func (p *planner) compute() {
	if p.planRestartAll() {
		return
	}
	d := SandboxChanged(p.pod, p.in.Observed)
	p.acts.Attempt = d.Attempt
	if d.Recreate {
		p.planNewSandbox(d.Reason)
		return
	}
	p.acts.SandboxID = d.Current
	p.killOutsideCurrent()
	p.planEphemeral()
	initialized, failed := p.planInit()
	if failed != "" {
		p.finish(PodInitFailed, p.initFailedReason(failed))
		return
	}
	if !initialized {
		return
	}
	keep := p.planRegular()
	if keep == 0 && !p.regularScheduled() {
		reason := fmt.Sprintf("no container is running or to be started under restartPolicy %s", p.policy())
		if p.ownPolicies() {
			reason += " and the containers' own restart policies"
		}
		if p.pod.DeletionTimestamp != nil {
			reason = "the pod is being deleted and no container is running"
		}
		p.finish(PodNothingToRun, reason)
	}
}

// planNewSandbox handles a pod without a usable sandbox: kill what is left, and create a
// new sandbox unless the pod has finished under its restart policy.
func (p *planner) planNewSandbox(reason PodKillReason) {
	if p.pod.Spec.RestartPolicy == v1.RestartPolicyNever && len(p.in.Observed.Containers) > 0 {
		p.finishWith(reason, "the pod's containers have run under restartPolicy Never: no new sandbox")
		return
	}
	var toStart []*v1.Container
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		last := p.v.newest(c.Name)
		if runsOnce(c, p.pod) && last != nil && last.State == StateExited && last.ExitCode == 0 {
			continue
		}
		toStart = append(toStart, c)
	}
	if len(toStart) == 0 && p.anyRegularCreated() {
		p.finishWith(reason, fmt.Sprintf(
			"all containers have completed under restartPolicy %s: no new sandbox", p.policy()))
		return
	}
	if len(p.in.Observed.Sandboxes) > 0 || len(p.in.Observed.Containers) > 0 {
		p.acts.KillPod = true
		p.acts.KillPodReason = reason
		p.killAllLive(KillSandboxChanged, "Pod sandbox changed, it will be killed and re-created")
		p.acts.StopSandboxes = p.sandboxIDs()
	}
	p.acts.CreateSandbox = true
	if len(p.pod.Spec.InitContainers) > 0 {
		// A new sandbox initializes from scratch: the old init instances do not count,
		// neither for the order nor for back-off.
		first := &p.pod.Spec.InitContainers[0]
		p.schedule(first, initType(first), nil, &p.acts.InitToStart)
		return
	}
	for _, c := range toStart {
		p.schedule(c, TypeRegular, p.v.newestExited(c.Name, false), &p.acts.ContainersToStart)
	}
}

// initFailedReason says why the failed init container name ends the pod: the restart
// policy that does not restart it, its own when it has one.
func (p *planner) initFailedReason(name string) string {
	for i := range p.pod.Spec.InitContainers {
		if c := &p.pod.Spec.InitContainers[i]; c.Name == name && c.RestartPolicy != nil {
			return fmt.Sprintf("init container %s failed and its restartPolicy %s (with its rules) does not restart it", name, *c.RestartPolicy)
		}
	}
	return fmt.Sprintf("init container %s failed under restartPolicy %s", name, p.policy())
}

// finishWith kills the pod (with the sandbox reason that got us here) and marks it done.
func (p *planner) finishWith(reason PodKillReason, done string) {
	if len(p.in.Observed.Sandboxes) > 0 || len(p.in.Observed.Containers) > 0 {
		p.acts.KillPod = true
		p.acts.KillPodReason = reason
		p.killAllLive(KillPodDone, "The pod is done: "+done)
		p.acts.StopSandboxes = p.sandboxIDs()
	}
	p.acts.Done = true
	p.acts.DoneReason = done
}

// finish drops every start and wait, kills the whole pod and marks it done.
func (p *planner) finish(reason PodKillReason, done string) {
	p.acts.InitToStart = nil
	p.acts.ContainersToStart = nil
	p.acts.Waits = nil
	p.finishWith(reason, done)
}

// killOutsideCurrent kills containers still alive in sandboxes other than the current.
func (p *planner) killOutsideCurrent() {
	for i := range p.in.Observed.Containers {
		c := &p.in.Observed.Containers[i]
		if live(c) && c.SandboxID != p.v.current {
			p.kill(c, KillOldSandbox, fmt.Sprintf(
				"Container belongs to sandbox %s, not to the current sandbox %s", c.SandboxID, p.v.current))
		}
	}
}

// planEphemeral starts ephemeral containers that never ran; they are never restarted.
func (p *planner) planEphemeral() {
	for i := range p.pod.Spec.EphemeralContainers {
		name := p.pod.Spec.EphemeralContainers[i].Name
		if p.v.newest(name) == nil {
			p.acts.ContainersToStart = append(p.acts.ContainersToStart,
				Start{Name: name, Type: TypeEphemeral, Reason: StartFirst})
		}
	}
}

// planRegular decides for every regular container and returns how many running ones
// are kept.
func (p *planner) planRegular() (keep int) {
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		last := p.v.newestLive(c.Name)
		if last != nil && last.State == StateRunning {
			if !p.judgeRunning(c, last) {
				keep++
			}
			continue
		}
		if !ShouldRestart(p.pod, c, last) {
			continue
		}
		if last != nil {
			p.killBeforeRestart(last, "Container")
		}
		p.schedule(c, TypeRegular, p.v.newestExited(c.Name, false), &p.acts.ContainersToStart)
	}
	return keep
}

// judgeRunning kills a running regular container whose spec hash changed or whose
// liveness or startup probe failed, and restarts it when its restart policy (its own,
// else the pod's: anything but Never; rules need an exit code) or a spec change says
// so. It reports whether the container is killed.
func (p *planner) judgeRunning(c *v1.Container, last *Container) bool {
	restart := restartsAfterKill(c, p.pod)
	probe := p.probe(c.Name, last.ID)
	var reason KillReason
	var msg string
	switch {
	case p.hashChanged(c, last):
		reason, msg, restart = KillSpecChanged, fmt.Sprintf("Container %s spec hash changed", c.Name), true
	case probe.LivenessFailed:
		reason, msg = KillLivenessProbe, fmt.Sprintf("Container %s failed liveness probe", c.Name)
	case probe.StartupFailed:
		reason, msg = KillStartupProbe, fmt.Sprintf("Container %s failed startup probe", c.Name)
	default:
		return false
	}
	if restart {
		msg += ", will be restarted"
	}
	p.kill(last, reason, msg)
	if restart {
		p.schedule(c, TypeRegular, p.v.newestExited(c.Name, false), &p.acts.ContainersToStart)
	}
	return true
}

// killBeforeRestart removes a created-but-never-started or unknown-state instance before
// a new one is started; exited instances need nothing.
func (p *planner) killBeforeRestart(last *Container, kind string) {
	switch last.State {
	case StateUnknown:
		p.kill(last, KillUnknownState, fmt.Sprintf(
			"%s is in %q state, try killing it before restart", kind, "unknown"))
	case StateCreated:
		p.kill(last, KillNeverStarted, fmt.Sprintf(
			"%s was created but never started, removing it before restart", kind))
	}
}

// schedule appends a Start for c to list, or a Wait when c's crash back-off has not
// elapsed. Back-off applies only when an exited instance exists (exited).
func (p *planner) schedule(c *v1.Container, typ ContainerType, exited *Container, list *[]Start) {
	if until := p.in.Backoff[c.Name]; exited != nil && until.After(p.in.Now) {
		delay := until.Sub(exited.FinishedAt).Round(time.Second)
		p.acts.Waits = append(p.acts.Waits, Wait{
			Name: c.Name, Type: typ, Until: until, Reason: ReasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, p.podName()),
		})
		return
	}
	*list = append(*list, Start{
		Name: c.Name, Type: typ, RestartCount: p.v.nextRestartCount(c.Name), Reason: p.startReason(c.Name),
	})
}

func (p *planner) startReason(name string) StartReason {
	last := p.v.newest(name)
	switch {
	case last == nil:
		return StartFirst
	case p.killed[last.ID]:
		return StartReplace
	}
	return StartRestart
}

// kill adds c to ContainersToKill once.
func (p *planner) kill(c *Container, reason KillReason, msg string) {
	if p.killed[c.ID] {
		return
	}
	p.killed[c.ID] = true
	typ := c.Type
	if typ == "" {
		typ = specType(p.pod, c.Name)
	}
	p.acts.ContainersToKill = append(p.acts.ContainersToKill,
		Kill{ID: c.ID, Name: c.Name, Type: typ, Reason: reason, Message: msg})
}

// killAllLive kills every container that is not exited, in any sandbox.
func (p *planner) killAllLive(reason KillReason, msg string) {
	for i := range p.in.Observed.Containers {
		if c := &p.in.Observed.Containers[i]; live(c) {
			p.kill(c, reason, msg)
		}
	}
}

func (p *planner) sandboxIDs() []string {
	ids := make([]string, 0, len(p.v.sandboxes))
	for _, s := range p.v.sandboxes {
		ids = append(ids, s.ID)
	}
	return ids
}

// anyRegularCreated is the kubelet's hasAnyRegularContainerCreated.
func (p *planner) anyRegularCreated() bool {
	for _, c := range p.pod.Spec.Containers {
		if last := p.v.newest(c.Name); last != nil && last.State != StateUnknown {
			return true
		}
	}
	return false
}

// regularScheduled reports whether a regular container is to be started or waits.
func (p *planner) regularScheduled() bool {
	for _, s := range p.acts.ContainersToStart {
		if s.Type == TypeRegular {
			return true
		}
	}
	for _, w := range p.acts.Waits {
		if w.Type == TypeRegular {
			return true
		}
	}
	return false
}

func (p *planner) probe(name, id string) ProbeStatus {
	ps := p.in.Probes[name]
	if ps.ContainerID != "" && ps.ContainerID != id {
		return ProbeStatus{}
	}
	return ps
}

func (p *planner) hashChanged(c *v1.Container, last *Container) bool {
	return p.in.Hash != nil && last.Hash != "" && last.Hash != p.in.Hash(c)
}

func (p *planner) policy() v1.RestartPolicy {
	if p.pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return p.pod.Spec.RestartPolicy
}

// ownPolicies reports whether a regular container has its own restartPolicy.
func (p *planner) ownPolicies() bool {
	for _, c := range p.pod.Spec.Containers {
		if c.RestartPolicy != nil {
			return true
		}
	}
	return false
}

// podName is the kubelet's format.Pod: name_namespace(uid).
func (p *planner) podName() string {
	return fmt.Sprintf("%s_%s(%s)", p.pod.Name, p.pod.Namespace, p.pod.UID)
}
