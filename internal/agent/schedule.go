package agent

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/nodefit"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// The agent plays the scheduler for the pods its own controllers make (a
// controller ownerReference to a berth workload, no spec.nodeName): such
// a pod is placed on the node only when it fits the node as the
// scheduler sees it (the node's labels and taints, with the NoSchedule
// taints of its pressure conditions, as TaintNodesByCondition adds
// them); until then it waits Pending, PodScheduled False, reason
// Unschedulable, with no sandbox, and its controller counts it as it
// counts an unscheduled pod. Bare pods (applied, watched) are bound pods
// as kubelet sees them: they keep kubelet's admission and are rejected.

// eventFailedScheduling is the scheduler's event for a pod it could not
// place.
const eventFailedScheduling = "FailedScheduling"

// unschedulableRetryPeriod is how often a pod that still does not fit is
// reported again with the same message: the scheduler moves unschedulable
// pods back to its active queue at least every 5 minutes
// (podMaxInUnschedulablePodsDuration) and records FailedScheduling again.
// A change of the reason is reported at once.
const unschedulableRetryPeriod = 5 * time.Minute

// unschedulable is why a pod waits for the scheduler.
type unschedulable struct {
	message  string    // the scheduler's FitError
	since    time.Time // PodScheduled went False
	recorded time.Time // the last FailedScheduling event
}

func (a *Agent) newUnschedulable(message string) *unschedulable {
	now := a.deps.clock.Now()
	return &unschedulable{message: message, since: now, recorded: now}
}

// schedulerNode is the node as the scheduler sees it: its labels and
// taints, and the taints of its pressure conditions.
func (a *Agent) schedulerNode() *v1.Node {
	return nodefit.WithTaints(a.fitNode(), nodefit.ConditionTaints(a.pressure.manager.Conditions()))
}

// scheduledByAgentLocked says whether the agent's scheduler places the
// pod: one of its controllers made it and it names no node.
func (a *Agent) scheduledByAgentLocked(pod *v1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && pod.Spec.NodeName == "" && a.workloads[string(ref.UID)] != nil
}

// scheduleLocked is the scheduler's verdict on a new pod; a pod it does
// not schedule is admitted here (kubelet's admission follows).
func (a *Agent) scheduleLocked(pod *v1.Pod) nodefit.Result {
	if !a.scheduledByAgentLocked(pod) {
		return nodefit.Result{Admit: true}
	}
	return nodefit.Schedule(pod, a.schedulerNode())
}

// schedulePendingLocked tries the pods that wait for the scheduler again
// (run with the controllers, and woken when a node condition flips): one
// that fits now is bound (Scheduled event, kubelet's admission) and runs;
// one that still does not gets FailedScheduling again only when the
// reason changed or unschedulableRetryPeriod passed.
func (a *Agent) schedulePendingLocked() {
	var node *v1.Node
	now := a.deps.clock.Now()
	for _, w := range a.workers {
		pod, u := w.pending()
		if pod == nil {
			continue
		}
		if node == nil {
			node = a.schedulerNode()
		}
		if fit := nodefit.Schedule(pod, node); !fit.Admit {
			if fit.Message != u.message || now.Sub(u.recorded) >= unschedulableRetryPeriod {
				w.stillUnschedulable(fit.Message, now)
				w.record(agentapi.EventWarning, eventFailedScheduling, "", fit.Message)
			}
			continue
		}
		d := desiredPod{pod: pod}
		a.bindLocked(&d)
		if w.bind(d) {
			w.recordBound(d)
		}
	}
}

// pending returns a copy of the pod and why it waits, if it waits for
// the scheduler (and is not being deleted).
func (w *podWorker) pending() (*v1.Pod, unschedulable) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.desired.unscheduled == nil || w.desired.terminating() {
		return nil, unschedulable{}
	}
	return w.desired.pod.DeepCopy(), *w.desired.unscheduled
}

// stillUnschedulable keeps the pod waiting with the scheduler's newest
// message (PodScheduled stays False since it went False).
func (w *podWorker) stillUnschedulable(message string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if u := w.desired.unscheduled; u != nil {
		u.message, u.recorded = message, now
	}
}

// bind places a waiting pod as bound: its next sync runs it, or keeps it
// rejected. A pod deleted meanwhile is left to its deletion.
func (w *podWorker) bind(bound desiredPod) bool {
	took := false
	w.setDesired(func(d *desiredPod) {
		if d.unscheduled == nil || d.terminating() {
			return
		}
		d.pod.Spec.NodeName, d.unscheduled, d.failure = bound.pod.Spec.NodeName, nil, bound.failure
		took = true
	})
	return took
}

// unscheduledStatus is the status of a pod the scheduler has not placed:
// Pending, its QoS class, and PodScheduled False with the scheduler's
// reason and message.
func unscheduledStatus(pod *v1.Pod, u *unschedulable) v1.PodStatus {
	return v1.PodStatus{
		Phase:    v1.PodPending,
		QOSClass: podspec.QOSClass(pod),
		Conditions: []v1.PodCondition{{
			Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: nodefit.ReasonUnschedulable,
			Message: u.message, LastTransitionTime: metav1.NewTime(u.since),
		}},
	}
}
