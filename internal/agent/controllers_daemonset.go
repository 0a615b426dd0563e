package agent

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// syncDaemonSetLocked makes or deletes the DaemonSet's pod on this node
// (package workload decides, against the node's labels and taints) and
// updates its status; a deleted DaemonSet is forgotten once its pods are
// gone.
func (a *Agent) syncDaemonSetLocked(o *workloadObj, owned []ownedPod) {
	ds := o.ds
	pods := make([]workload.DaemonPod, len(owned))
	for i := range owned {
		pods[i] = workload.DaemonPod{Pod: controllerView(&owned[i].pod), Hash: owned[i].pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]}
	}
	now := a.deps.clock.Now()
	act := workload.ReconcileDaemonSet(ds, a.fitNode(), pods, now)
	asked := len(act.Delete)
	act.Delete = holdFailedDaemonPods(a.daemonBackoff, o.uid(), act.Delete, pods, now)
	for _, e := range act.Events {
		if e.Reason == "FailedDaemonPod" && asked != len(act.Delete) {
			continue // said when its deletion goes through
		}
		typ := agentapi.EventWarning
		if e.Reason == "SucceededDaemonPod" {
			typ = agentapi.EventNormal
		}
		o.events.record(typ, e.Reason, "", e.Message)
	}
	for _, name := range act.Delete {
		for _, p := range owned {
			if p.pod.Name == name {
				p.w.beginTermination(nil, "Killing", "deleted by its DaemonSet "+ds.Name)
				o.events.record(agentapi.EventNormal, "SuccessfulDelete", "", "Deleted pod: "+name)
			}
		}
	}
	if act.Create {
		name := a.createPodLocked(o, act.Template)
		o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", "Created pod: "+name)
	}
	if ds.DeletionTimestamp != nil && len(owned) == 0 {
		a.forgetWorkloadLocked(o)
		return
	}
	if !apiequality.Semantic.DeepEqual(ds.Status, act.Status) {
		ds.Status = act.Status
		if err := a.saveLocked(o); err != nil {
			a.log.Error("workload: save DaemonSet status", "daemonset", ds.Namespace+"/"+ds.Name, "error", err)
		}
	}
}

// daemonFailedBackoff is the daemon set controller's failedPodsBackoff:
// 1 s doubling to 15 min.
var daemonFailedBackoff = backoff.Config{Initial: time.Second, Max: 15 * time.Minute, ResetAfter: 15 * time.Minute}

// holdFailedDaemonPods keeps a failed pod (one the node rejected, or
// evicted) from being deleted, and so replaced, while the DaemonSet's
// back-off runs, so that a node that keeps refusing it is not asked every
// second; each deletion it lets through doubles the back-off. It returns
// the names to delete now.
func holdFailedDaemonPods(b *backoff.Backoff, key string, names []string, pods []workload.DaemonPod, now time.Time) []string {
	failed := map[string]bool{}
	for _, p := range pods {
		failed[p.Name] = p.Phase == v1.PodFailed && !p.Deleting
	}
	var out []string
	for _, name := range names {
		if failed[name] {
			if !b.UntilRecorded(key, now).IsZero() {
				continue
			}
			b.Next(key, now, now)
		}
		out = append(out, name)
	}
	return out
}

// rolloutDaemonSetLocked is `rollout restart` of a DaemonSet: a new
// restartedAt template annotation replaces its pod by its update
// strategy. berth keeps no ControllerRevisions, so there is no undo.
func (a *Agent) rolloutDaemonSetLocked(o *workloadObj, req agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	if !req.Restart || req.Undo {
		return agentapi.ApplyResult{}, fmt.Errorf("rollout: DaemonSet %s/%s: berth keeps no revision history of DaemonSets; only restart: %w", o.ds.Namespace, o.ds.Name, errdefs.ErrInvalidArgument)
	}
	next := o.copy()
	t := &next.ds.Spec.Template
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[restartedAtKey] = a.deps.clock.Now().Format(time.RFC3339)
	return a.updateLocked(o, next, outcomeRestarted)
}
