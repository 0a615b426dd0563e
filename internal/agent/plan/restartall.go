package plan

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// planRestartAll is the first step of kubelet's computePodActions when the pod is marked
// for RestartAllContainers (KEP-5532): the newest instance of an init or regular
// container exited with a code that matches one of its RestartAllContainers rules. Then
// every instance of every init and regular container, in every sandbox, is to be
// killed if it may still run and removed; the sandbox and the ephemeral containers stay,
// and nothing else is planned. It reports whether it planned that.
func (p *planner) planRestartAll() bool {
	if p.pod.DeletionTimestamp != nil {
		return false
	}
	name := RestartAllTriggered(p.pod, p.in.Observed)
	if name == "" {
		return false
	}
	p.acts.SandboxID = p.v.current
	p.acts.RestartAll = fmt.Sprintf("container %s exited with code %d, matching its RestartAllContainers rule",
		name, p.v.newest(name).ExitCode)
	initSources, initTargets := p.resets(p.pod.Spec.InitContainers)
	sources, targets := p.resets(p.pod.Spec.Containers)
	p.acts.ContainersToReset = append(append(append(targets, initTargets...), sources...), initSources...)
	return true
}

// resets lists every instance of the given containers, in spec order and newest first
// for each: sources are exited instances whose exit code matches a RestartAllContainers
// rule, targets the others (kubelet's getContainersToReset).
func (p *planner) resets(specs []v1.Container) (sources, targets []Reset) {
	for i := range specs {
		c := &specs[i]
		for _, inst := range p.v.byName[c.Name] {
			r := Reset{ID: inst.ID, Name: c.Name, Type: inst.Type, Kill: inst.State != StateExited}
			if r.Type == "" {
				r.Type = specType(p.pod, c.Name)
			}
			if restartAllSource(c, &inst) {
				r.Source = true
				sources = append(sources, r)
				continue
			}
			targets = append(targets, r)
		}
	}
	return sources, targets
}
