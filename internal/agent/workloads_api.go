package agent

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// Outcomes of workload calls, as kubectl prints them.
const (
	outcomeScaled     = "scaled"
	outcomeRestarted  = "restarted"
	outcomeRolledBack = "rolled back"
	restartedAtKey    = "kubectl.kubernetes.io/restartedAt"
)

// ListWorkloads lists the Deployments, ReplicaSets or DaemonSets of a namespace
// (every namespace when empty); objects being deleted are gone already, as
// with the API server's background deletion.
func (a *Agent) ListWorkloads(resource, namespace string) (agentapi.WorkloadList, error) {
	if resource == agentapi.ResourcePersistentVolumeClaim {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.listClaimsLocked(namespace)
	}
	if isServiceResource(resource) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.listServicesLocked(resource, namespace), nil
	}
	kind, err := resourceKind(resource)
	if err != nil {
		return agentapi.WorkloadList{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	list := agentapi.WorkloadList{}
	for _, o := range a.sortedWorkloadsLocked() {
		m := o.meta()
		if o.kind() != kind || m.DeletionTimestamp != nil || (namespace != "" && m.Namespace != namespace) {
			continue
		}
		if o.job != nil || o.cj != nil {
			listBatch(&list, o)
			continue
		}
		switch {
		case o.sts != nil:
			list.StatefulSets = append(list.StatefulSets, *o.sts.DeepCopy())
		case o.d != nil:
			list.Deployments = append(list.Deployments, *o.d.DeepCopy())
		case o.ds != nil:
			list.DaemonSets = append(list.DaemonSets, *o.ds.DeepCopy())
		default:
			list.ReplicaSets = append(list.ReplicaSets, *o.rs.DeepCopy())
		}
	}
	return list, nil
}

// lookupLocked finds the object a resource name stands for.
func (a *Agent) lookupLocked(resource, namespace, name string) (*workloadObj, error) {
	kind, err := resourceKind(resource)
	if err != nil {
		return nil, err
	}
	o := a.liveWorkloadLocked(kind, namespace, name)
	if o == nil {
		return nil, fmt.Errorf("%s %q not found in namespace %q: %w", resource, name, namespace, errdefs.ErrNotFound)
	}
	return o, nil
}

// DescribeWorkload returns an object with its ReplicaSets (a Deployment's,
// newest revision first) or pods (a ReplicaSet's), and its events.
func (a *Agent) DescribeWorkload(resource, namespace, name string) (agentapi.WorkloadDetail, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if resource == agentapi.ResourcePersistentVolumeClaim {
		return a.describeClaimLocked(namespace, name)
	}
	if isServiceResource(resource) {
		return a.describeServiceLocked(resource, namespace, name)
	}
	o, err := a.lookupLocked(resource, namespace, name)
	if err != nil {
		return agentapi.WorkloadDetail{}, err
	}
	if o.sts != nil {
		return a.describeStatefulSetLocked(o), nil
	}
	detail := agentapi.WorkloadDetail{Events: o.events.list()}
	if o.d != nil {
		detail.Deployment = o.d.DeepCopy()
		for _, rs := range a.ownedReplicaSetsLocked(o.uid()) {
			if rs.rs.DeletionTimestamp == nil {
				detail.ReplicaSets = append(detail.ReplicaSets, *rs.rs.DeepCopy())
			}
		}
		sort.SliceStable(detail.ReplicaSets, func(i, j int) bool {
			return workload.Revision(&detail.ReplicaSets[i]) > workload.Revision(&detail.ReplicaSets[j])
		})
		return detail, nil
	}
	if o.job != nil || o.cj != nil {
		a.describeBatchLocked(&detail, o)
		return detail, nil
	}
	if o.ds != nil {
		detail.DaemonSet = o.ds.DeepCopy()
	} else {
		detail.ReplicaSet = o.rs.DeepCopy()
	}
	for _, p := range a.ownedPodsLocked()[o.uid()] {
		detail.Pods = append(detail.Pods, p.pod)
	}
	sort.Slice(detail.Pods, func(i, j int) bool { return detail.Pods[i].Name < detail.Pods[j].Name })
	return detail, nil
}

// DeleteWorkload deletes a workload, claim or Service; a workload with the
// API server's background propagation: the object is gone at once, what
// it owns (a Deployment's ReplicaSets, a CronJob's Jobs, pods) is deleted
// after it (each pod within grace, when given). The
// deletion is saved before any pod stops, so a restarted agent finishes it.
func (a *Agent) DeleteWorkload(_ context.Context, resource, namespace, name string, grace *int64) (agentapi.DeleteResponse, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.DeleteResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if resource == agentapi.ResourcePersistentVolumeClaim {
		return a.deleteClaimAPILocked(namespace, name)
	}
	if resource == agentapi.ResourceService {
		return a.deleteServiceLocked(namespace, name)
	}
	o, err := a.lookupLocked(resource, namespace, name)
	if err != nil {
		return agentapi.DeleteResponse{}, err
	}
	return a.deleteWorkloadLocked(o, grace)
}

// deleteWorkloadLocked deletes a workload as DeleteWorkload does.
func (a *Agent) deleteWorkloadLocked(o *workloadObj, grace *int64) (agentapi.DeleteResponse, error) {
	targets := []*workloadObj{o}
	if o.d != nil {
		targets = append(targets, a.ownedReplicaSetsLocked(o.uid())...)
	}
	if o.cj != nil {
		targets = append(targets, a.ownedJobsLocked(o.uid())...)
	}
	for _, t := range targets {
		if err := a.markDeletingLocked(t); err != nil {
			return agentapi.DeleteResponse{}, err
		}
	}
	resp := agentapi.DeleteResponse{Deleted: []agentapi.ApplyResult{{Kind: o.kind(), Namespace: o.meta().Namespace, Name: o.meta().Name, UID: o.uid(), Outcome: agentapi.OutcomeDeleted}}}
	pods := a.ownedPodsLocked()
	for _, t := range targets[1:] {
		resp.Pods = append(resp.Pods, a.stopPodsLocked(pods[t.uid()], grace, t)...)
	}
	if o.rs != nil || o.sts != nil || o.ds != nil || o.job != nil {
		resp.Pods = append(resp.Pods, a.stopPodsLocked(pods[o.uid()], grace, o)...)
	}
	a.wakeControllers()
	return resp, nil
}

// stopPodsLocked begins the termination of an owner's pods.
func (a *Agent) stopPodsLocked(pods []ownedPod, grace *int64, owner *workloadObj) []agentapi.ApplyResult {
	var out []agentapi.ApplyResult
	for _, p := range pods {
		if p.pod.DeletionTimestamp == nil || grace != nil {
			p.w.beginTermination(grace, "Killing", "deleted with its "+owner.kind()+" "+owner.meta().Name)
		}
		out = append(out, agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: p.pod.Namespace, Name: p.pod.Name, UID: string(p.pod.UID), Outcome: agentapi.OutcomeDeleted})
	}
	return out
}

// Scale sets a Deployment's or ReplicaSet's replicas. A ReplicaSet a
// Deployment controls is scaled by its Deployment, as in Kubernetes: a
// change would be undone at once, so it is refused.
func (a *Agent) Scale(_ context.Context, resource, namespace, name string, replicas int32) (agentapi.ApplyResult, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.ApplyResult{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	o, err := a.lookupLocked(resource, namespace, name)
	if err != nil {
		return agentapi.ApplyResult{}, err
	}
	if o.ds != nil {
		return agentapi.ApplyResult{}, fmt.Errorf("DaemonSet %s/%s has no replicas (one pod on each node that fits): %w", namespace, name, errdefs.ErrInvalidArgument)
	}
	if o.job != nil || o.cj != nil {
		return agentapi.ApplyResult{}, fmt.Errorf("scale: %s %s/%s has no replicas: %w", o.kind(), namespace, name, errdefs.ErrInvalidArgument)
	}
	if ref := metav1.GetControllerOf(o.meta()); ref != nil {
		return agentapi.ApplyResult{}, fmt.Errorf("%s %s/%s is controlled by %s %s: scale that: %w", o.kind(), namespace, name, ref.Kind, ref.Name, errdefs.ErrFailedPrecondition)
	}
	next := o.copy()
	switch {
	case next.sts != nil:
		next.sts.Spec.Replicas = &replicas
	case next.d != nil:
		next.d.Spec.Replicas = &replicas
	default:
		next.rs.Spec.Replicas = &replicas
	}
	return a.updateLocked(o, next, outcomeScaled)
}

// copy is a deep copy of the object sharing its event log.
func (o *workloadObj) copy() *workloadObj {
	c := &workloadObj{source: o.source, events: o.events, revisions: o.revisions, counted: maps.Clone(o.counted)}
	switch {
	case o.sts != nil:
		c.sts = o.sts.DeepCopy()
	case o.d != nil:
		c.d = o.d.DeepCopy()
	case o.ds != nil:
		c.ds = o.ds.DeepCopy()
	case o.job != nil:
		c.job = o.job.DeepCopy()
	case o.cj != nil:
		c.cj = o.cj.DeepCopy()
	default:
		c.rs = o.rs.DeepCopy()
	}
	return c
}

// updateLocked saves next (a changed spec: its generation moves) in place
// of o and wakes the controllers.
func (a *Agent) updateLocked(o, next *workloadObj, outcome string) (agentapi.ApplyResult, error) {
	m := next.meta()
	m.Generation++
	if err := a.saveLocked(next); err != nil {
		return agentapi.ApplyResult{}, err
	}
	a.workloads[o.uid()] = next
	a.wakeControllers()
	return agentapi.ApplyResult{Kind: o.kind(), Namespace: m.Namespace, Name: m.Name, UID: o.uid(), Outcome: outcome}, nil
}

// Rollout restarts a Deployment (a new restartedAt template annotation
// rolls every pod), rolls it back to a revision's template, or pauses or
// resumes it.
func (a *Agent) Rollout(_ context.Context, resource, namespace, name string, req agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.ApplyResult{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	o, err := a.lookupLocked(resource, namespace, name)
	if err != nil {
		return agentapi.ApplyResult{}, err
	}
	if req.Actions() != 1 {
		return agentapi.ApplyResult{}, fmt.Errorf("rollout: ask for one of restart, undo, pause or resume: %w", errdefs.ErrInvalidArgument)
	}
	switch {
	case req.Pause || req.Resume:
		return a.pauseLocked(resource, o, req.Pause)
	case o.sts != nil:
		return a.rolloutStatefulSetLocked(o, req)
	case o.ds != nil:
		return a.rolloutDaemonSetLocked(o, req)
	case o.d == nil:
		return agentapi.ApplyResult{}, fmt.Errorf("rollout: %s %s/%s: only Deployments, StatefulSets and DaemonSets roll out: %w", o.kind(), namespace, name, errdefs.ErrInvalidArgument)
	}
	next := o.copy()
	if req.Restart {
		if o.d.Spec.Paused {
			return agentapi.ApplyResult{}, rolloutError(resource, o, "can't restart paused deployment (run rollout resume first)", errdefs.ErrFailedPrecondition)
		}
		t := &next.d.Spec.Template
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[restartedAtKey] = a.deps.clock.Now().Format(time.RFC3339)
		return a.updateLocked(o, next, outcomeRestarted)
	}
	template, err := a.revisionTemplateLocked(o, req.ToRevision)
	if err != nil {
		return agentapi.ApplyResult{}, err
	}
	if o.d.Spec.Paused { // after the revision is found, as kubectl checks
		return agentapi.ApplyResult{}, &objectError{msg: "you cannot rollback a paused deployment; resume it first with 'berth rollout resume' and try again", kind: errdefs.ErrFailedPrecondition}
	}
	next.d.Spec.Template = *template
	return a.updateLocked(o, next, outcomeRolledBack)
}

// revisionTemplateLocked is the template of a Deployment's revision (0:
// the one before the current), without the pod-template-hash label.
func (a *Agent) revisionTemplateLocked(o *workloadObj, revision int64) (*v1.PodTemplateSpec, error) {
	var sets []*appsv1.ReplicaSet
	for _, rs := range a.ownedReplicaSetsLocked(o.uid()) {
		if rs.rs.DeletionTimestamp == nil {
			sets = append(sets, rs.rs)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return workload.Revision(sets[i]) > workload.Revision(sets[j]) })
	var found *appsv1.ReplicaSet
	for i, rs := range sets {
		if (revision == 0 && i == 1) || (revision != 0 && workload.Revision(rs) == revision) {
			found = rs
			break
		}
	}
	if found == nil {
		what := "no previous revision"
		if revision != 0 {
			what = fmt.Sprintf("no revision %d", revision)
		}
		return nil, fmt.Errorf("rollout undo: Deployment %s/%s has %s: %w", o.d.Namespace, o.d.Name, what, errdefs.ErrNotFound)
	}
	template := found.Spec.Template.DeepCopy()
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return template, nil
}
