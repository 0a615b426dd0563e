package agent

import (
	"cmp"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

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

// scheduleLocked is the scheduler's verdict on a new pod, with the room
// left on the node; a pod it does not schedule is admitted here
// (kubelet's admission follows).
func (a *Agent) scheduleLocked(pod *v1.Pod, room nodefit.Room) nodefit.Result {
	if !a.scheduledByAgentLocked(pod) {
		return nodefit.Result{Admit: true}
	}
	return nodefit.Schedule(pod, a.schedulerNode(), room)
}

// waitingPod is a pod that waits for the scheduler, and its worker.
type waitingPod struct {
	pod *v1.Pod
	why unschedulable
	w   *podWorker
}

// schedulePendingLocked tries the pods that wait for the scheduler again
// (run with the controllers, and woken when a node condition flips or a
// pod's worker ends), in the scheduler's queue order (higher priority,
// then older, first): one that fits now is bound (Scheduled event,
// kubelet's admission) and runs, and takes its room; one that still does
// not gets FailedScheduling again only when the reason changed or
// unschedulableRetryPeriod passed.
func (a *Agent) schedulePendingLocked() { a.schedulePendingAheadLocked(nil) }

// schedulePendingAheadLocked is schedulePendingLocked for the waiting pods
// ahead of a new pod in the queue (nil: all of them): the new pod joins
// the queue behind them, so they take the room it would find first.
func (a *Agent) schedulePendingAheadLocked(pod *v1.Pod) {
	waiting := a.waitingPodsLocked()
	if pod != nil {
		next := a.workerSeq + 1 // the seq its worker will have
		waiting = slices.DeleteFunc(waiting, func(p waitingPod) bool { return queueOrder(p.pod, p.w.seq, pod, next) >= 0 })
	}
	if len(waiting) == 0 {
		return
	}
	node, room := a.schedulerNode(), a.nodeRoomLocked("")
	now := a.deps.clock.Now()
	for _, p := range waiting {
		if fit := nodefit.Schedule(p.pod, node, room); !fit.Admit {
			if fit.Message != p.why.message || now.Sub(p.why.recorded) >= unschedulableRetryPeriod {
				p.w.stillUnschedulable(fit.Message, now)
				p.w.record(agentapi.EventWarning, eventFailedScheduling, "", fit.Message)
			}
			continue
		}
		d := desiredPod{pod: p.pod}
		admitted := a.bindLocked(&d, room)
		if p.w.bind(d) {
			p.w.recordBound(d)
			if admitted {
				room.Requested.Add(p.w.requests)
			}
		}
	}
}

// waitingPodsLocked lists the pods waiting for the scheduler in its
// queue's order (queueOrder): priority, then creation, then arrival.
func (a *Agent) waitingPodsLocked() []waitingPod {
	var out []waitingPod
	for _, w := range a.workers {
		if pod, why := w.pending(); pod != nil {
			out = append(out, waitingPod{pod: pod, why: why, w: w})
		}
	}
	slices.SortFunc(out, func(x, y waitingPod) int { return queueOrder(x.pod, x.w.seq, y.pod, y.w.seq) })
	return out
}

// queueOrder is the scheduler queue's order of two pods and their
// workers' seq: the higher priority first, then the older, then the one
// the agent took first.
func queueOrder(x *v1.Pod, xSeq uint64, y *v1.Pod, ySeq uint64) int {
	if c := cmp.Compare(corev1helpers.PodPriority(y), corev1helpers.PodPriority(x)); c != 0 {
		return c
	}
	if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(xSeq, ySeq)
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
			ObservedGeneration: pod.Generation, // the scheduler's, as 1.34+ sets it
		}},
	}
}
