package podstatus

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// Reasons and exit code the kubelet uses in container states.
const (
	ReasonContainerCreating      = "ContainerCreating"
	ReasonPodInitializing        = "PodInitializing"
	ReasonCompleted              = "Completed"
	ReasonError                  = "Error"
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	// ReasonRestartingAllContainers is the state reason of a container that
	// RestartAllContainers removed, until it starts again.
	ReasonRestartingAllContainers = "RestartingAllContainers"
	exitCodeUnknown               = 137
)

// statusKind is the list a status belongs to.
type statusKind int

const (
	kindRegular statusKind = iota
	kindInit
	kindEphemeral
)

// builder converts observed instances into API container statuses.
type builder struct {
	in      Input
	prev    v1.PodStatus
	runtime string
	current string // ID of the current sandbox
	// restartingAll: the pod is restarting all its containers (RestartAllContainers)
	restartingAll bool
}

func newBuilder(in Input, prev v1.PodStatus) *builder {
	b := &builder{in: in, prev: prev, runtime: in.RuntimeName, restartingAll: restartingAll(in, prev)}
	if b.runtime == "" {
		b.runtime = DefaultRuntimeName
	}
	if sb, ok := in.Observed.Current(); ok {
		b.current = sb.ID
	}
	return b
}

// statuses returns one status per spec, in spec order.
func (b *builder) statuses(specs []v1.Container, previous []v1.ContainerStatus, kind statusKind) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		out = append(out, b.status(&specs[i], findStatus(previous, specs[i].Name), kind))
	}
	return out
}

// status builds one container's status: the newest instance gives state and
// restartCount, the one before it lastTerminationState; then the waiting reason and the
// probe-derived started and ready (not for ephemeral containers, which have no probes).
func (b *builder) status(spec *v1.Container, old *v1.ContainerStatus, kind statusKind) v1.ContainerStatus {
	instances := b.in.Observed.Instances(spec.Name)
	var st v1.ContainerStatus
	var latest *plan.Container
	switch {
	case len(instances) == 0 && kind != kindEphemeral && b.restartingAll && old != nil && old.State.Waiting == nil:
		st = removedByRestartAll(spec, old)
	case len(instances) == 0:
		st = b.missing(spec, old)
	default:
		latest = &instances[0]
		st = b.convert(latest, old, spec)
		if len(instances) > 1 {
			st.LastTerminationState = b.convert(&instances[1], old, spec).State
		} else {
			keepLastTermination(&st, old)
		}
	}
	b.applyWaiting(spec, &st, latest, kind == kindInit)
	if kind != kindEphemeral {
		b.setProbeFields(spec, &st, latest, kind == kindInit)
	}
	return st
}

// missing is the status of a container with no instance: waiting to be created, with the
// previous restart count and last termination kept; a previous terminated status stays
// as it was. A container that was running and vanished is shown as terminated with an
// unknown status in lastTerminationState.
func (b *builder) missing(spec *v1.Container, old *v1.ContainerStatus) v1.ContainerStatus {
	reason := ReasonContainerCreating
	if len(b.in.Pod.Spec.InitContainers) > 0 {
		reason = ReasonPodInitializing
	}
	st := v1.ContainerStatus{
		Name: spec.Name, Image: spec.Image,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}},
	}
	if old == nil {
		return st
	}
	if old.State.Terminated != nil {
		return *old.DeepCopy()
	}
	st.RestartCount = old.RestartCount
	st.LastTerminationState = *old.LastTerminationState.DeepCopy()
	if old.State.Running != nil && st.LastTerminationState.Terminated == nil {
		st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			ExitCode: exitCodeUnknown,
			Reason:   ReasonContainerStatusUnknown,
			Message:  "The container was running and is no longer known to the runtime",
		}
		if b.in.Pod.DeletionTimestamp == nil {
			st.RestartCount++
		}
	}
	return st
}

// convert turns one instance into a status: created is waiting (no reason), exited is
// terminated, unknown after running is terminated with exit code 137, else waiting.
func (b *builder) convert(c *plan.Container, old *v1.ContainerStatus, spec *v1.Container) v1.ContainerStatus {
	id := b.runtime + "://" + c.ID
	st := v1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: c.ImageRef, ContainerID: id,
		RestartCount: int32(c.RestartCount),
	}
	if st.Image == "" {
		st.Image = spec.Image
	}
	if old != nil {
		// A restart count never goes down: RestartAllContainers removes the
		// instances that held the higher one.
		st.RestartCount = max(st.RestartCount, old.RestartCount)
	}
	switch {
	case c.State == plan.StateRunning:
		st.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= int32(c.RestartCount) {
			st.RestartCount = old.RestartCount + 1
		}
	case c.State == plan.StateExited:
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode: c.ExitCode, Reason: terminatedReason(c), Message: c.Message,
			StartedAt: metav1.NewTime(c.StartedAt), FinishedAt: metav1.NewTime(c.FinishedAt),
			ContainerID: id,
		}
	case c.State == plan.StateUnknown && old != nil && old.State.Running != nil:
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode: exitCodeUnknown,
			Reason:   ReasonContainerStatusUnknown,
			Message:  "The container was running and its state is now unknown to the runtime",
		}
		st.RestartCount = old.RestartCount + 1
	default:
		st.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return st
}

// keepLastTermination gives the only instance of a container the last termination the
// previous status knew, as kubelet does since RestartAllContainers removes the instances
// it would read it from: the previous instance's own termination when it is another
// instance, else the previous status's last termination.
func keepLastTermination(st *v1.ContainerStatus, old *v1.ContainerStatus) {
	switch {
	case old == nil:
	case old.ContainerID != st.ContainerID && old.State.Terminated != nil:
		st.LastTerminationState.Terminated = old.State.Terminated.DeepCopy()
	case old.LastTerminationState.Terminated != nil:
		st.LastTerminationState.Terminated = old.LastTerminationState.Terminated.DeepCopy()
	}
}

// terminatedReason is the runtime's reason, or Completed / Error from the exit code.
func terminatedReason(c *plan.Container) string {
	switch {
	case c.Reason != "":
		return c.Reason
	case c.ExitCode == 0:
		return ReasonCompleted
	}
	return ReasonError
}

// applyWaiting shows the executor's waiting reason for a container that must be
// (re)started; a terminated state moves to lastTerminationState. An init container that
// completed is left alone; a non-restartable init container without instance in an
// initialized pod is shown as completed.
func (b *builder) applyWaiting(spec *v1.Container, st *v1.ContainerStatus, latest *plan.Container, isInit bool) {
	if isInit {
		if latest != nil && latest.State == plan.StateExited && latest.ExitCode == 0 {
			return
		}
		if latest == nil && !plan.IsSidecar(spec) && b.anyRegularCreated() && st.State.Waiting != nil {
			st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				Reason:  ReasonCompleted,
				Message: "The init container is gone and the pod is initialized: treated as completed",
			}}
			return
		}
	}
	if !plan.ShouldRestart(b.in.Pod, spec, latest) {
		return
	}
	w, ok := b.in.Waiting[spec.Name]
	if !ok {
		return
	}
	if st.State.Terminated != nil {
		st.LastTerminationState = st.State
	}
	st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
}

// setProbeFields sets started (running, and the startup probe succeeded if there is
// one) and ready (non-restartable init container: exited 0; others: started and the
// readiness probe succeeded if there is one), as the kubelet's probe manager does.
func (b *builder) setProbeFields(spec *v1.Container, st *v1.ContainerStatus, latest *plan.Container, isInit bool) {
	var probe plan.ProbeStatus
	if latest != nil {
		probe = b.probe(spec.Name, latest.ID)
	}
	applyProbe(spec, st, probe, isInit)
}

// applyProbe is the one rule for started and ready, which Compute and
// UpdateProbes share.
func applyProbe(spec *v1.Container, st *v1.ContainerStatus, probe plan.ProbeStatus, isInit bool) {
	running := st.State.Running != nil
	started := running && (spec.StartupProbe == nil || probe.Started)
	st.Started = &started
	if isInit && !plan.IsSidecar(spec) {
		st.Ready = st.State.Terminated != nil && st.State.Terminated.ExitCode == 0
		return
	}
	st.Ready = started && (spec.ReadinessProbe == nil || probe.Ready)
}

func (b *builder) probe(name, id string) plan.ProbeStatus {
	p := b.in.Probes[name]
	if p.ContainerID != "" && p.ContainerID != id {
		return plan.ProbeStatus{}
	}
	return p
}

// anyRegularCreated reports whether a regular container's newest instance is created,
// running or exited.
func (b *builder) anyRegularCreated() bool {
	for _, c := range b.in.Pod.Spec.Containers {
		is := b.in.Observed.Instances(c.Name)
		if len(is) > 0 && is[0].State != plan.StateUnknown {
			return true
		}
	}
	return false
}

// activeRegularStarted reports whether a regular container has an instance in the
// current sandbox: then the pod was initialized in it.
func (b *builder) activeRegularStarted() bool {
	for _, c := range b.in.Pod.Spec.Containers {
		for _, inst := range b.in.Observed.Instances(c.Name) {
			if inst.SandboxID == b.current {
				return true
			}
		}
	}
	return false
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
