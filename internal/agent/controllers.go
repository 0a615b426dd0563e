package agent

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// controllerPeriod is how often the workload controllers look at their
// pods without being woken: a pod whose status changes in what they read
// wakes them (controllerView), so the tick serves what time alone changes
// (minReadySeconds, progress deadlines, CronJob schedules).
const controllerPeriod = time.Second

// runControllers runs the workload controllers until ctx ends: on every
// tick, and when an API call changed an object.
func (a *Agent) runControllers(ctx context.Context) {
	select { // the node's pressure first: see pressure.measured
	case <-a.pressure.measured:
	case <-ctx.Done():
		return
	}
	ticker := a.deps.clock.NewTicker(controllerPeriod)
	defer ticker.Stop()
	for {
		a.reconcileWorkloads()
		a.reconcileServices()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-a.controllerWake:
		}
	}
}

// wakeControllers asks for a controller pass soon.
func (a *Agent) wakeControllers() {
	select {
	case a.controllerWake <- struct{}{}:
	default:
	}
}

// ownedPod is a pod a controller owns, and its worker.
type ownedPod struct {
	pod v1.Pod
	w   *podWorker
}

// reconcileWorkloads runs each Deployment's and CronJob's controller,
// then each ReplicaSet's, StatefulSet's, DaemonSet's and Job's, once;
// the pods they ask for are made after, in slow-start batches, the
// agent's lock released between batches (podbatches.go). One pass runs
// at a time.
func (a *Agent) reconcileWorkloads() {
	a.controllerPass.Lock()
	defer a.controllerPass.Unlock()
	for _, c := range a.reconcileWorkloadsLocked() {
		a.createPods(c)
	}
}

// reconcileWorkloadsLocked is the pass under the agent's lock; it
// returns the pods still to make.
func (a *Agent) reconcileWorkloadsLocked() []podCreation {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return nil
	}
	var creations []podCreation
	collect := func(c podCreation) {
		if len(c.pods) > 0 {
			creations = append(creations, c)
		}
	}
	for _, o := range a.sortedWorkloadsLocked() {
		if o.d != nil {
			a.syncDeploymentLocked(o)
		}
		if o.cj != nil {
			a.syncCronJobLocked(o)
		}
	}
	a.schedulePendingLocked() // before the controllers count their pods
	pods := a.ownedPodsLocked()
	for _, o := range a.sortedWorkloadsLocked() {
		if o.rs != nil {
			before := replicaCounts(o.rs.Status)
			collect(a.syncReplicaSetLocked(o, pods[o.uid()]))
			if replicaCounts(o.rs.Status) != before {
				a.wakeControllers() // its Deployment reads them, in the next pass
			}
		}
		if o.ds != nil {
			a.syncDaemonSetLocked(o, pods[o.uid()])
		}
		if o.sts != nil {
			collect(a.syncStatefulSetLocked(o, pods[o.uid()]))
		}
		if o.job != nil {
			collect(a.syncJobLocked(o, pods[o.uid()]))
		}
	}
	a.syncClaimsLocked()
	return creations
}

// replicaCounts is what a Deployment reads of its ReplicaSets' status.
func replicaCounts(st appsv1.ReplicaSetStatus) [5]int64 {
	return [5]int64{int64(st.Replicas), int64(st.ReadyReplicas), int64(st.AvailableReplicas),
		int64(st.FullyLabeledReplicas), st.ObservedGeneration}
}

func (a *Agent) sortedWorkloadsLocked() []*workloadObj {
	out := make([]*workloadObj, 0, len(a.workloads))
	for _, o := range a.workloads {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i].meta(), out[j].meta()
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		if x.Name != y.Name {
			return x.Name < y.Name
		}
		return x.CreationTimestamp.Before(&y.CreationTimestamp)
	})
	return out
}

// ownedPodsLocked groups the pods by the uid of their controller.
func (a *Agent) ownedPodsLocked() map[string][]ownedPod {
	out := map[string][]ownedPod{}
	for _, w := range a.workers {
		pod := w.view()
		if ref := metav1.GetControllerOf(&pod); ref != nil {
			out[string(ref.UID)] = append(out[string(ref.UID)], ownedPod{pod: pod, w: w})
		}
	}
	return out
}

// ownedReplicaSetsLocked lists the ReplicaSets a Deployment controls.
func (a *Agent) ownedReplicaSetsLocked(uid string) []*workloadObj {
	var out []*workloadObj
	for _, o := range a.sortedWorkloadsLocked() {
		if o.rs == nil {
			continue
		}
		if ref := metav1.GetControllerOf(o.rs); ref != nil && string(ref.UID) == uid {
			out = append(out, o)
		}
	}
	return out
}

// markDeletingLocked starts an object's deletion: it is saved with its
// deletionTimestamp first, then its name is free; its controller removes
// what it owns, then the object.
func (a *Agent) markDeletingLocked(o *workloadObj) error {
	if o.meta().DeletionTimestamp != nil {
		return nil
	}
	now := metav1.NewTime(a.deps.clock.Now())
	o.meta().DeletionTimestamp = &now
	if err := a.saveLocked(o); err != nil {
		o.meta().DeletionTimestamp = nil
		return err
	}
	m := o.meta()
	if key := nameKey(o.kind(), m.Namespace, m.Name); a.workloadNames[key] == o.uid() {
		delete(a.workloadNames, key)
	}
	return nil
}

// forgetWorkloadLocked removes a deleted object whose dependents are gone;
// its owner, if deleted too, may then go in the next pass.
func (a *Agent) forgetWorkloadLocked(o *workloadObj) {
	if err := a.workloadStore.Remove(o.kind(), o.uid()); err != nil {
		a.log.Error("workload: remove record", "object", o.kind()+" "+o.meta().Namespace+"/"+o.meta().Name, "error", err)
		return
	}
	a.forgetTemplateSourcesLocked(o)
	delete(a.workloads, o.uid())
	a.wakeControllers()
}

// syncReplicaSetLocked deletes the ReplicaSet's extra pods and updates
// its status; the pods it lacks are returned, to be made after the pass.
func (a *Agent) syncReplicaSetLocked(o *workloadObj, owned []ownedPod) podCreation {
	rs := o.rs
	pods := make([]workload.Pod, len(owned))
	for i := range owned {
		pods[i] = controllerView(&owned[i].pod)
	}
	act := workload.ReconcileReplicaSet(rs, pods, a.deps.clock.Now())
	for _, name := range act.Delete {
		for _, p := range owned {
			if p.pod.Name == name {
				p.w.beginTermination(nil, "Killing", "deleted by its ReplicaSet "+rs.Name)
				o.events.record(agentapi.EventNormal, "SuccessfulDelete", "", "Deleted pod: "+name)
			}
		}
	}
	if rs.DeletionTimestamp != nil && len(owned) == 0 {
		a.forgetWorkloadLocked(o)
		return podCreation{}
	}
	if !apiequality.Semantic.DeepEqual(rs.Status, act.Status) {
		rs.Status = act.Status
		if err := a.saveLocked(o); err != nil {
			a.log.Error("workload: save ReplicaSet status", "replicaset", rs.Namespace+"/"+rs.Name, "error", err)
		}
	}
	c := plannedCreation(o)
	for range act.Create {
		c.pods = append(c.pods, func() {
			name := a.createPodLocked(o, &o.rs.Spec.Template)
			o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", "Created pod: "+name)
		})
	}
	return c
}

// controllerView is what a controller sees of a pod.
func controllerView(pod *v1.Pod) workload.Pod {
	p := workload.Pod{Name: pod.Name, Phase: pod.Status.Phase, Deleting: pod.DeletionTimestamp != nil, Created: pod.CreationTimestamp.Time}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			p.Ready, p.ReadySince = true, c.LastTransitionTime.Time
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		p.Restarts = max(p.Restarts, s.RestartCount)
	}
	return p
}

// sameControllerView says whether a controller sees a and b alike.
func sameControllerView(a, b workload.Pod) bool {
	return a.Name == b.Name && a.Phase == b.Phase && a.Ready == b.Ready && a.Deleting == b.Deleting &&
		a.ReadySince.Equal(b.ReadySince) && a.Created.Equal(b.Created) && a.Restarts == b.Restarts
}

// createPodLocked makes a pod of an apps/v1 ReplicaSet or DaemonSet from
// template, named as the API server names one from generateName
// "<owner>-", and returns its name.
func (a *Agent) createPodLocked(o *workloadObj, template *v1.PodTemplateSpec) string {
	owner := o.meta()
	name := workload.PodName(owner.Name)
	for a.current[owner.Namespace+"/"+name] != "" {
		name = workload.PodName(owner.Name)
	}
	t := template.DeepCopy()
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: owner.Name + "-", Namespace: owner.Namespace, UID: newUID(),
			Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind(o.kind()))},
		},
		Spec: t.Spec,
	}
	a.applyPodLocked(&manifest.Pod{Pod: pod, Source: o.source}, "")
	return name
}

// syncDeploymentLocked takes a Deployment one step towards its template
// and replicas through its ReplicaSets; a deleted one deletes them.
func (a *Agent) syncDeploymentLocked(o *workloadObj) {
	d := o.d
	owned := a.ownedReplicaSetsLocked(o.uid())
	if d.DeletionTimestamp != nil {
		for _, rs := range owned {
			if err := a.markDeletingLocked(rs); err != nil {
				a.log.Error("workload: delete ReplicaSet", "replicaset", rs.rs.Name, "error", err)
			}
		}
		if len(owned) == 0 {
			a.forgetWorkloadLocked(o)
		}
		return
	}
	var sets []*appsv1.ReplicaSet
	byName := map[string]*workloadObj{}
	for _, rs := range owned {
		if rs.rs.DeletionTimestamp == nil {
			sets = append(sets, rs.rs)
			byName[rs.rs.Name] = rs
		}
	}
	act := workload.ReconcileDeployment(d, sets, a.deps.clock.Now())
	if err := a.applyDeploymentActionsLocked(o, act, byName); err != nil {
		a.log.Error("workload: deployment", "deployment", d.Namespace+"/"+d.Name, "error", err)
		return
	}
	for _, e := range act.Events {
		o.events.record(agentapi.EventNormal, e.Reason, "", e.Message)
	}
}

// applyDeploymentActionsLocked saves the ReplicaSets the controller made
// or changed, each before anything acts on it, then the Deployment.
func (a *Agent) applyDeploymentActionsLocked(o *workloadObj, act workload.DeploymentActions, byName map[string]*workloadObj) error {
	d := o.d
	if act.Create != nil {
		act.Create.UID = newUID()
		rs := &workloadObj{rs: act.Create, source: o.source, events: newEventLog(a.deps.clock.Now)}
		if err := a.saveLocked(rs); err != nil {
			return err
		}
		a.addWorkloadLocked(rs)
		byName[rs.rs.Name] = rs
	}
	for _, rs := range byName {
		if rs.rs.Annotations == nil { // a ReplicaSet applied with an owner reference
			rs.rs.Annotations = map[string]string{}
		}
	}
	surge, _ := workload.Fenceposts(d)
	for name, replicas := range act.Scale {
		rs := byName[name]
		if workload.Replicas(rs.rs.Spec.Replicas) != replicas {
			rs.rs.Generation++
		}
		rs.rs.Spec.Replicas = &replicas
		// As the controller's scaleReplicaSet: the size it was scaled for
		// (a paused Deployment's proportional scaling reads max-replicas).
		rs.rs.Annotations[workload.DesiredReplicasAnnotation] = strconv.Itoa(int(workload.Replicas(d.Spec.Replicas)))
		rs.rs.Annotations[workload.MaxReplicasAnnotation] = strconv.Itoa(int(workload.Replicas(d.Spec.Replicas) + surge))
	}
	for name, revision := range act.Revision {
		byName[name].rs.Annotations[workload.RevisionAnnotation] = revision
	}
	for name := range byName {
		_, scaled := act.Scale[name]
		_, revised := act.Revision[name]
		if scaled || revised {
			if err := a.saveLocked(byName[name]); err != nil {
				return err
			}
		}
	}
	for _, name := range act.Delete {
		if err := a.markDeletingLocked(byName[name]); err != nil {
			return err
		}
	}
	return a.updateDeploymentLocked(o, act.Status, byName)
}

// updateDeploymentLocked saves a Deployment's new status and revision.
func (a *Agent) updateDeploymentLocked(o *workloadObj, status appsv1.DeploymentStatus, byName map[string]*workloadObj) error {
	d := o.d
	revision := ""
	for _, rs := range byName {
		if rs.rs.DeletionTimestamp == nil && templateMatches(rs.rs, d) {
			revision = rs.rs.Annotations[workload.RevisionAnnotation]
		}
	}
	if apiequality.Semantic.DeepEqual(d.Status, status) && (revision == "" || d.Annotations[workload.RevisionAnnotation] == revision) {
		return nil
	}
	d.Status = status
	if revision != "" {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[workload.RevisionAnnotation] = revision
	}
	if err := a.saveLocked(o); err != nil {
		return fmt.Errorf("save status: %w", err)
	}
	return nil
}

// templateMatches says whether rs runs d's current template.
func templateMatches(rs *appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" && workload.TemplateEqualIgnoringHash(&rs.Spec.Template, &d.Spec.Template)
}
