package agent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/errdefs"
)

// workloadObj is one Deployment, ReplicaSet, StatefulSet, DaemonSet, Job
// or CronJob the agent keeps (guarded by a.mu): as applied or as its
// controller made it, with its status.
type workloadObj struct {
	d   *appsv1.Deployment // one of d, rs, sts, ds, job and cj is set
	rs  *appsv1.ReplicaSet
	sts *appsv1.StatefulSet
	ds  *appsv1.DaemonSet
	job *batchv1.Job
	cj  *batchv1.CronJob
	// revisions are a StatefulSet's ControllerRevisions, oldest first.
	revisions []appsv1.ControllerRevision
	source    string
	events    *eventLog

	// counted: the UIDs of a Job's pods its status counts.
	counted map[string]bool
}

func (o *workloadObj) kind() string {
	switch {
	case o.d != nil:
		return workloadstore.KindDeployment
	case o.ds != nil:
		return workloadstore.KindDaemonSet
	case o.sts != nil:
		return workloadstore.KindStatefulSet
	case o.job != nil:
		return workloadstore.KindJob
	case o.cj != nil:
		return workloadstore.KindCronJob
	}
	return workloadstore.KindReplicaSet
}

func (o *workloadObj) meta() *metav1.ObjectMeta {
	switch {
	case o.d != nil:
		return &o.d.ObjectMeta
	case o.ds != nil:
		return &o.ds.ObjectMeta
	case o.sts != nil:
		return &o.sts.ObjectMeta
	case o.job != nil:
		return &o.job.ObjectMeta
	case o.cj != nil:
		return &o.cj.ObjectMeta
	}
	return &o.rs.ObjectMeta
}

func (o *workloadObj) uid() string { return string(o.meta().UID) }

func (o *workloadObj) record() workloadstore.Record {
	return workloadstore.Record{Kind: o.kind(), Source: o.source, Deployment: o.d, ReplicaSet: o.rs, StatefulSet: o.sts, DaemonSet: o.ds, Revisions: o.revisions, Job: o.job, CronJob: o.cj, Counted: sortedSet(o.counted)}
}

// nameKey is "Kind namespace/name", the key of workloadNames.
func nameKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// resourceKind maps an API resource ("deployments") to its kind.
func resourceKind(resource string) (string, error) {
	switch resource {
	case agentapi.ResourceDeployment:
		return workloadstore.KindDeployment, nil
	case agentapi.ResourceReplicaSet:
		return workloadstore.KindReplicaSet, nil
	case agentapi.ResourceDaemonSet:
		return workloadstore.KindDaemonSet, nil
	case agentapi.ResourceStatefulSet:
		return workloadstore.KindStatefulSet, nil
	case agentapi.ResourceJob:
		return workloadstore.KindJob, nil
	case agentapi.ResourceCronJob:
		return workloadstore.KindCronJob, nil
	}
	return "", fmt.Errorf("resource %q: want deployments, replicasets, statefulsets, daemonsets, jobs or cronjobs: %w", resource, errdefs.ErrInvalidArgument)
}

// newUID makes a random uid, formatted as the API server's.
func newUID() types.UID {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

// saveLocked writes the object's record; the agent acts on an object only
// once it is saved.
func (a *Agent) saveLocked(o *workloadObj) error {
	return a.workloadStore.Save(o.record())
}

// addWorkloadLocked registers an object (its name stands for it unless it
// is being deleted).
func (a *Agent) addWorkloadLocked(o *workloadObj) {
	a.workloads[o.uid()] = o
	if o.meta().DeletionTimestamp == nil {
		a.workloadNames[nameKey(o.kind(), o.meta().Namespace, o.meta().Name)] = o.uid()
	}
}

// liveWorkloadLocked returns the object a name stands for, or nil.
func (a *Agent) liveWorkloadLocked(kind, namespace, name string) *workloadObj {
	return a.workloads[a.workloadNames[nameKey(kind, namespace, name)]]
}

// loadWorkloadsLocked reads the saved objects back at recovery. What the
// store could not read it set aside; it is logged here.
func (a *Agent) loadWorkloadsLocked() {
	records, problems := a.workloadStore.Load()
	for _, err := range problems {
		a.log.Error("recover: a workload record could not be read; its pods are left as they are", "error", err)
	}
	for _, r := range records {
		if r.Service != nil {
			continue // loadServicesLocked's
		}
		o := &workloadObj{d: r.Deployment, rs: r.ReplicaSet, sts: r.StatefulSet, ds: r.DaemonSet, revisions: r.Revisions, job: r.Job, cj: r.CronJob, counted: setOf(r.Counted), source: r.Source, events: newEventLog(a.deps.clock.Now)}
		a.addWorkloadLocked(o)
		a.recoverTemplateSourcesLocked(o)
	}
}

// checkWorkloadUpdatesLocked refuses a bundle that would change an
// immutable field of an object the agent holds.
func (a *Agent) checkWorkloadUpdatesLocked(b *manifest.Bundle) error {
	var problems []manifest.Problem
	immutable := func(source, object string, selector *metav1.LabelSelector) {
		problems = append(problems, manifest.Problem{Source: source, Object: object, Err: field.Invalid(field.NewPath("spec", "selector"), selector, "field is immutable")})
	}
	for _, d := range b.Deployments {
		if cur := a.liveWorkloadLocked(workloadstore.KindDeployment, d.Namespace, d.Name); cur != nil && !apiequality.Semantic.DeepEqual(cur.d.Spec.Selector, d.Spec.Selector) {
			immutable(d.Source, "Deployment "+d.Namespace+"/"+d.Name, d.Spec.Selector)
		}
	}
	for _, rs := range b.ReplicaSets {
		if cur := a.liveWorkloadLocked(workloadstore.KindReplicaSet, rs.Namespace, rs.Name); cur != nil && !apiequality.Semantic.DeepEqual(cur.rs.Spec.Selector, rs.Spec.Selector) {
			immutable(rs.Source, "ReplicaSet "+rs.Namespace+"/"+rs.Name, rs.Spec.Selector)
		}
	}
	for _, ds := range b.DaemonSets {
		if cur := a.liveWorkloadLocked(workloadstore.KindDaemonSet, ds.Namespace, ds.Name); cur != nil && !apiequality.Semantic.DeepEqual(cur.ds.Spec.Selector, ds.Spec.Selector) {
			immutable(ds.Source, "DaemonSet "+ds.Namespace+"/"+ds.Name, ds.Spec.Selector)
		}
	}
	problems = append(problems, a.statefulSetUpdateProblems(b)...)
	problems = append(problems, a.jobUpdateProblemsLocked(b)...)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, &manifest.InvalidError{Problems: problems})
}

// applyWorkloadsLocked creates or updates the bundle's Deployments and
// ReplicaSets; their controllers do the rest.
func (a *Agent) applyWorkloadsLocked(b *manifest.Bundle) ([]agentapi.ApplyResult, error) {
	results, err := a.applyStatefulSetsLocked(b)
	if err != nil {
		return results, err
	}
	for _, d := range b.Deployments {
		obj := d.DeepCopy()
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: workloadstore.KindDeployment}
		if cur := a.liveWorkloadLocked(workloadstore.KindDeployment, obj.Namespace, obj.Name); cur != nil && d.KeepPaused {
			obj.Spec.Paused = cur.d.Spec.Paused
		}
		r, err := a.applyWorkloadLocked(&workloadObj{d: obj, source: d.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	for _, rs := range b.ReplicaSets {
		obj := rs.DeepCopy()
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: workloadstore.KindReplicaSet}
		r, err := a.applyWorkloadLocked(&workloadObj{rs: obj, source: rs.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	for _, ds := range b.DaemonSets {
		obj := ds.DeepCopy()
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: workloadstore.KindDaemonSet}
		r, err := a.applyWorkloadLocked(&workloadObj{ds: obj, source: ds.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	jobs, err := a.applyJobsLocked(b)
	return append(results, jobs...), err
}

// applyWorkloadLocked creates an object, or updates the one of its name:
// labels, annotations and spec are the applied ones (the controller's own
// annotations kept); a changed spec moves its generation.
func (a *Agent) applyWorkloadLocked(in *workloadObj) (agentapi.ApplyResult, error) {
	m := in.meta()
	result := agentapi.ApplyResult{Kind: in.kind(), Namespace: m.Namespace, Name: m.Name, Outcome: agentapi.OutcomeCreated}
	cur := a.liveWorkloadLocked(in.kind(), m.Namespace, m.Name)
	if cur == nil {
		m.UID, m.Generation, m.CreationTimestamp = newUID(), 1, metav1.NewTime(a.deps.clock.Now())
		if in.job != nil {
			workload.SetJobSelector(in.job)
		}
		in.events = newEventLog(a.deps.clock.Now)
		if err := a.saveLocked(in); err != nil {
			return result, err
		}
		a.addWorkloadLocked(in)
		result.UID = in.uid()
		return result, nil
	}
	keepRestartedAt(in, cur)
	next := &workloadObj{source: in.source, events: cur.events}
	specChanged := false
	switch {
	case cur.sts != nil:
		next.sts, next.revisions = cur.sts.DeepCopy(), cur.revisions
		specChanged = !apiequality.Semantic.DeepEqual(cur.sts.Spec, in.sts.Spec)
		next.sts.Spec = in.sts.Spec
	case cur.d != nil:
		next.d = cur.d.DeepCopy()
		specChanged = !apiequality.Semantic.DeepEqual(cur.d.Spec, in.d.Spec)
		next.d.Spec = in.d.Spec
	case cur.ds != nil:
		next.ds = cur.ds.DeepCopy()
		specChanged = !apiequality.Semantic.DeepEqual(cur.ds.Spec, in.ds.Spec)
		next.ds.Spec = in.ds.Spec
	case cur.job != nil || cur.cj != nil:
		specChanged = next.setBatchSpec(cur, in)
	default:
		next.rs = cur.rs.DeepCopy()
		specChanged = !apiequality.Semantic.DeepEqual(cur.rs.Spec, in.rs.Spec)
		next.rs.Spec = in.rs.Spec
	}
	nm := next.meta()
	annotations := withControllerAnnotations(m.Annotations, nm.Annotations)
	result.UID = string(nm.UID)
	if !specChanged && apiequality.Semantic.DeepEqual(nm.Labels, m.Labels) && apiequality.Semantic.DeepEqual(nm.Annotations, annotations) {
		result.Outcome = agentapi.OutcomeUnchanged
		return result, nil
	}
	nm.Labels, nm.Annotations = m.Labels, annotations
	if specChanged {
		nm.Generation++
	}
	if err := a.saveLocked(next); err != nil {
		return result, err
	}
	a.workloads[next.uid()] = next
	result.Outcome = agentapi.OutcomeConfigured
	return result, nil
}

// withControllerAnnotations is applied plus the annotations a controller
// set on the object (deployment.kubernetes.io/...).
func withControllerAnnotations(applied, current map[string]string) map[string]string {
	out := maps.Clone(applied)
	for _, key := range []string{workload.RevisionAnnotation, workload.DesiredReplicasAnnotation, workload.MaxReplicasAnnotation} {
		if v, found := current[key]; found {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = v
		}
	}
	return out
}

// keepRestartedAt keeps the template annotation 'rollout restart' set
// when the applied template leaves it out, as kubectl apply keeps a field
// its last applied configuration did not hold: applying the same manifest
// again (a watched directory's scan at the agent's start) does not roll
// the pods back to the template before the restart.
func keepRestartedAt(in, cur *workloadObj) {
	var applied, current *v1.PodTemplateSpec
	switch {
	case in.d != nil && cur.d != nil:
		applied, current = &in.d.Spec.Template, &cur.d.Spec.Template
	case in.sts != nil && cur.sts != nil:
		applied, current = &in.sts.Spec.Template, &cur.sts.Spec.Template
	case in.ds != nil && cur.ds != nil:
		applied, current = &in.ds.Spec.Template, &cur.ds.Spec.Template
	default:
		return
	}
	at, restarted := current.Annotations[restartedAtKey]
	if _, given := applied.Annotations[restartedAtKey]; !restarted || given {
		return
	}
	if applied.Annotations == nil {
		applied.Annotations = map[string]string{}
	}
	applied.Annotations[restartedAtKey] = at
}
