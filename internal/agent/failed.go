package agent

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
)

// podFailure is why a pod will run nothing again although it was not
// deleted: the node rejected it at admission, or evicted it. It stays
// Failed with reason and message until deleted (or its manifest changes).
type podFailure struct {
	reason, message string
	rejected        bool      // refused at admission: nothing of it ever ran
	at              time.Time // when it was evicted
	grace           int64     // seconds its containers get to stop
}

// fail marks the pod failed: its next sync stops it within grace and
// removes what it holds on the node, keeping its status. A pod already
// failed or being deleted is left as it is; fail reports whether it took.
func (w *podWorker) fail(f podFailure) bool {
	w.mu.Lock()
	if w.desired.failure != nil || w.desired.terminating() {
		w.mu.Unlock()
		return false
	}
	w.desired.failure = &f
	if w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.deps.probes.SetTerminating(w.uid)
	w.trigger()
	return true
}

// failedState reports whether the pod has failed, and whether its
// containers are all stopped and removed since.
func (w *podWorker) failedState() (failed, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.desired.failure != nil, w.failedDone
}

// syncFailed stops a failed pod's containers (regular ones first, as a
// deletion does), sets its final status (phase Failed with the failure's
// reason and message), then removes its sandboxes, volumes, logs and
// cgroup; the worker keeps the pod and its status until it is deleted.
func (w *podWorker) syncFailed(ctx context.Context, d desiredPod, obs observation) time.Duration {
	if _, done := w.failedState(); done {
		return idleResync
	}
	f := d.failure
	w.stopAll(ctx, d.pod, obs, f.at.Add(time.Duration(f.grace)*time.Second))
	if fresh, err := w.deps.observe(ctx, w.uid); err == nil {
		obs = fresh
	}
	status := w.failedStatus(d, obs)
	if !w.removeSandboxes(ctx, d, obs) {
		return retryAfterFailure
	}
	w.deps.probes.RemovePod(w.uid)
	if err := w.cleanUpHost(d); err != nil {
		w.record(agentapi.EventWarning, "FailedUnmount", "", err.Error())
		return retryAfterFailure
	}
	w.mu.Lock()
	w.status, w.synced, w.failedDone = status, true, true
	w.mu.Unlock()
	w.deps.log.Info("pod failed", "pod", d.key(), "uid", w.uid, "reason", f.reason, "message", f.message)
	return idleResync
}

// failedStatus is the final status of a failed pod: kubelet's rejectPod
// status for a rejected one (phase, reason, message, QoS class only);
// for an evicted one, its stopped containers' statuses with phase Failed,
// the reason and message, and the DisruptionTarget condition kubelet adds.
func (w *podWorker) failedStatus(d desiredPod, obs observation) v1.PodStatus {
	f := d.failure
	if f.rejected {
		return v1.PodStatus{Phase: v1.PodFailed, Reason: f.reason, Message: f.message, QOSClass: podspec.QOSClass(d.pod),
			ObservedGeneration: d.pod.Generation}
	}
	w.mu.Lock()
	var previous *v1.PodStatus
	if w.synced {
		previous = w.status.DeepCopy()
	}
	w.mu.Unlock()
	now := w.deps.clock.Now()
	s := podstatus.Compute(podstatus.Input{
		Pod: d.pod, Observed: obs.plan, Previous: previous, Terminal: true,
		HostIPs: w.deps.node.hostIPs, Now: now, RuntimeName: w.deps.runtimeName,
	})
	s.Phase, s.Reason, s.Message = v1.PodFailed, f.reason, f.message
	s.Conditions = append(s.Conditions, v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: f.message, LastTransitionTime: metav1.NewTime(now), ObservedGeneration: d.pod.Generation,
	})
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.PodReady || s.Conditions[i].Type == v1.ContainersReady {
			s.Conditions[i].Status = v1.ConditionFalse
		}
	}
	return s
}
