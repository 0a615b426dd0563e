package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// DefaultRuntimeName prefixes container IDs ("berth://<id>") when Input.RuntimeName is
// empty.
const DefaultRuntimeName = "berth"

// Waiting is why a container that should run is not running: the reason the executor
// last saw when it tried to start it (ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError, CreateContainerError, RunContainerError, ...) or the
// planner's CrashLoopBackOff.
type Waiting struct {
	Reason  string
	Message string
}

// Input is everything Compute looks at.
type Input struct {
	Pod      *v1.Pod
	Observed plan.Observed
	Probes   map[string]plan.ProbeStatus
	// Waiting holds, per container name, the reason its latest start did not happen.
	// It shows only for a container that ShouldRestart says must be (re)started.
	Waiting map[string]Waiting
	// Previous is the status this function returned last time for this pod (nil the
	// first time): it keeps transition times, the start time and terminal phases.
	Previous *v1.PodStatus
	// Terminal is true once the pod will run nothing again (the planner's Actions.Done):
	// with no container running, the phase is then Succeeded or Failed whatever the
	// restart policy.
	Terminal bool
	// RuntimeName prefixes container IDs; DefaultRuntimeName when empty.
	RuntimeName string
	// HostIPs are the node's IPs, primary first.
	HostIPs []string
	Now     time.Time
}

// FromWaits turns the planner's back-off waits into Waiting entries.
func FromWaits(waits []plan.Wait) map[string]Waiting {
	out := make(map[string]Waiting, len(waits))
	for _, w := range waits {
		out[w.Name] = Waiting{Reason: w.Reason, Message: w.Message}
	}
	return out
}

// Compute builds the pod's status as the kubelet's generateAPIPodStatus and status
// manager would: container statuses, phase, conditions, IPs, QoS class and start time.
func Compute(in Input) v1.PodStatus {
	var prev v1.PodStatus
	if in.Previous != nil {
		prev = *in.Previous
	}
	b := newBuilder(in, prev)
	s := v1.PodStatus{QOSClass: podspec.QOSClass(in.Pod)}
	s.InitContainerStatuses = b.statuses(in.Pod.Spec.InitContainers, prev.InitContainerStatuses, kindInit)
	s.ContainerStatuses = b.statuses(in.Pod.Spec.Containers, prev.ContainerStatuses, kindRegular)
	if eph := ephemeralSpecs(in.Pod); len(eph) > 0 {
		s.EphemeralContainerStatuses = b.statuses(eph, prev.EphemeralContainerStatuses, kindEphemeral)
	}
	s.Phase = phase(in.Pod, s.InitContainerStatuses, s.ContainerStatuses, in.Terminal, b.activeRegularStarted())
	mergePhase(&s, in.Pod.Status, prev)
	s.Conditions = conditions(in, prev, &s)
	setIPs(&s, in, prev)
	s.StartTime = startTime(in, prev)
	// The generation the status reflects, as kubelet's status manager sets
	// it (KEP-5067): never back.
	s.ObservedGeneration = max(in.Pod.Generation, prev.ObservedGeneration)
	return s
}

// mergePhase keeps a terminal phase once reached (pods never leave Succeeded or Failed)
// and keeps the phase's reason and message while the phase stays.
func mergePhase(s *v1.PodStatus, api, prev v1.PodStatus) {
	if !terminal(s.Phase) {
		switch {
		case terminal(prev.Phase):
			s.Phase = prev.Phase
		case terminal(api.Phase):
			s.Phase = api.Phase
		}
	}
	if terminal(api.Phase) {
		s.Phase = api.Phase
	}
	if s.Phase == prev.Phase {
		s.Reason, s.Message = prev.Reason, prev.Message
		if s.Reason == "" {
			s.Reason = api.Reason
		}
		if s.Message == "" {
			s.Message = api.Message
		}
	}
}

func terminal(p v1.PodPhase) bool {
	return p == v1.PodSucceeded || p == v1.PodFailed
}

// setIPs fills hostIP(s) from the input and podIP(s) from the current sandbox when it is
// ready; a host-network pod without its own IP gets the host's. While no sandbox of the
// pod is ready (a completed pod's is stopped, its IP released) the previous podIP(s)
// stay, as the kubelet's PLEG keeps them for exited pods.
func setIPs(s *v1.PodStatus, in Input, prev v1.PodStatus) {
	for _, ip := range in.HostIPs {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
	}
	if len(in.HostIPs) > 0 {
		s.HostIP = in.HostIPs[0]
	}
	if sb, ok := in.Observed.Current(); ok && sb.Ready && sb.IP != "" {
		for _, ip := range append([]string{sb.IP}, sb.AdditionalIPs...) {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
	}
	if len(s.PodIPs) == 0 && !anySandboxReady(in.Observed) {
		s.PodIPs = append([]v1.PodIP(nil), prev.PodIPs...)
	}
	if len(s.PodIPs) == 0 && in.Pod.Spec.HostNetwork {
		for _, ip := range in.HostIPs {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
}

func anySandboxReady(o plan.Observed) bool {
	for _, sb := range o.Sandboxes {
		if sb.Ready {
			return true
		}
	}
	return false
}

// startTime is set once: the previous value, else the applied pod's, else now.
func startTime(in Input, prev v1.PodStatus) *metav1.Time {
	for _, t := range []*metav1.Time{prev.StartTime, in.Pod.Status.StartTime} {
		if t != nil && !t.IsZero() {
			kept := *t
			return &kept
		}
	}
	t := metav1.NewTime(in.Now)
	return &t
}

func ephemeralSpecs(pod *v1.Pod) []v1.Container {
	var out []v1.Container
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}
