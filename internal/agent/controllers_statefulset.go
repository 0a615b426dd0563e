package agent

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// syncStatefulSetLocked takes a StatefulSet one step towards its replicas
// and template: claims before the pods that use them, pods by ordinal
// (returned, to be made after the pass), the claims of ordinals scaled
// away by whenScaled. A deleted one waits for its
// pods to go, then deletes its claims if whenDeleted is Delete.
func (a *Agent) syncStatefulSetLocked(o *workloadObj, owned []ownedPod) podCreation {
	set := o.sts
	if set.DeletionTimestamp != nil {
		a.finishStatefulSetDeletionLocked(o, owned)
		return podCreation{}
	}
	update, err := a.ensureRevisionLocked(o)
	if err != nil {
		a.log.Error("workload: statefulset revision", "statefulset", set.Namespace+"/"+set.Name, "error", err)
		return podCreation{}
	}
	pods := make([]workload.StatefulSetPod, len(owned))
	for i := range owned {
		pods[i] = workload.StatefulSetPod{Pod: controllerView(&owned[i].pod), Revision: owned[i].pod.Labels[workload.RevisionLabel]}
	}
	act := workload.ReconcileStatefulSet(workload.StatefulSetInput{
		Set: set, UpdateRevision: update, Pods: pods, Claims: a.ownedClaimsLocked(o), Now: a.deps.clock.Now(),
	})
	for _, name := range act.Delete {
		for _, p := range owned {
			if p.pod.Name == name {
				p.w.beginTermination(nil, "Killing", "deleted by its StatefulSet "+set.Name)
				o.events.record(agentapi.EventNormal, "SuccessfulDelete", "", fmt.Sprintf("delete Pod %s in StatefulSet %s successful", name, set.Name))
			}
		}
	}
	for _, name := range act.DeleteClaims {
		if _, err := a.deleteClaimLocked(set.Namespace, name); err != nil {
			a.log.Error("workload: statefulset claim", "claim", set.Namespace+"/"+name, "error", err)
		}
	}
	if !apiequality.Semantic.DeepEqual(set.Status, act.Status) {
		set.Status = act.Status
		if err := a.saveLocked(o); err != nil {
			a.log.Error("workload: save StatefulSet status", "statefulset", set.Namespace+"/"+set.Name, "error", err)
		}
	}
	creation := plannedCreation(o)
	for _, c := range act.Create {
		creation.pods = append(creation.pods, func() { a.createStatefulSetPodLocked(o, c) })
	}
	return creation
}

// createStatefulSetPodLocked makes the claims of an ordinal, then its pod
// from the revision's template. A name another pod holds (a bare pod, or
// ours still going) is left alone: the next pass tries again.
func (a *Agent) createStatefulSetPodLocked(o *workloadObj, c workload.PodToCreate) {
	set := o.sts
	name := workload.StatefulSetPodName(set, c.Ordinal)
	if a.current[set.Namespace+"/"+name] != "" {
		o.events.record(agentapi.EventWarning, "FailedCreate", "", fmt.Sprintf("create Pod %s in StatefulSet %s failed error: pods %q already exists", name, set.Name, name))
		return
	}
	for _, pvc := range workload.StatefulSetClaims(set, c.Ordinal) {
		if err := a.ensureSetClaimLocked(o, pvc, name); err != nil {
			o.events.record(agentapi.EventWarning, "FailedCreate", "", fmt.Sprintf("create Claim %s for Pod %s in StatefulSet %s failed error: %v", pvc.Name, name, set.Name, err))
			return
		}
	}
	template := a.revisionTemplate(o, c.Revision)
	pod := workload.NewStatefulSetPod(set, template, c.Revision, c.Ordinal)
	pod.UID = newUID()
	a.applyPodLocked(&manifest.Pod{Pod: pod, Source: o.source}, "")
	o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", fmt.Sprintf("create Pod %s in StatefulSet %s successful", name, set.Name))
}

// revisionPatch is a ControllerRevision's data, as the controller writes
// it: the template, replacing the set's.
type revisionPatch struct {
	Spec struct {
		Template v1.PodTemplateSpec `json:"template"`
		Patch    string             `json:"$patch"`
	} `json:"spec"`
}

// ensureRevisionLocked returns the name of the revision of the set's
// template, recording a ControllerRevision for it first if it is new (a
// template seen before gets its revision number moved to the newest).
// Revisions beyond revisionHistoryLimit that no pod runs are dropped.
func (a *Agent) ensureRevisionLocked(o *workloadObj) (string, error) {
	set := o.sts
	name := workload.RevisionName(set, &set.Spec.Template)
	var newest int64
	for _, r := range o.revisions {
		newest = max(newest, r.Revision)
	}
	for i := range o.revisions {
		if o.revisions[i].Name == name {
			if o.revisions[i].Revision == newest {
				return name, nil
			}
			o.revisions[i].Revision = newest + 1
			return name, a.saveLocked(o)
		}
	}
	var patch revisionPatch
	patch.Spec.Template, patch.Spec.Patch = *set.Spec.Template.DeepCopy(), "replace"
	raw, err := json.Marshal(patch)
	if err != nil {
		return "", err
	}
	rev := appsv1.ControllerRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace, UID: newUID(), CreationTimestamp: metav1.NewTime(a.deps.clock.Now()),
			Labels:          map[string]string{workload.RevisionLabel: name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Data: runtime.RawExtension{Raw: raw}, Revision: newest + 1,
	}
	o.revisions = a.pruneRevisionsLocked(o, append(o.revisions, rev))
	return name, a.saveLocked(o)
}

// pruneRevisionsLocked keeps the revisions pods run, the set's current
// one, and the newest revisionHistoryLimit others.
func (a *Agent) pruneRevisionsLocked(o *workloadObj, revs []appsv1.ControllerRevision) []appsv1.ControllerRevision {
	limit := 10
	if o.sts.Spec.RevisionHistoryLimit != nil {
		limit = int(*o.sts.Spec.RevisionHistoryLimit)
	}
	inUse := map[string]bool{o.sts.Status.CurrentRevision: true, o.sts.Status.UpdateRevision: true, revs[len(revs)-1].Name: true}
	for _, p := range a.ownedPodsLocked()[o.uid()] {
		inUse[p.pod.Labels[workload.RevisionLabel]] = true
	}
	var out []appsv1.ControllerRevision
	spare := 0
	for i := len(revs) - 1; i >= 0; i-- {
		if !inUse[revs[i].Name] {
			if spare >= limit {
				continue
			}
			spare++
		}
		out = append([]appsv1.ControllerRevision{revs[i]}, out...)
	}
	return out
}

// revisionTemplate is the template a revision recorded; the set's own
// when the revision is unknown.
func (a *Agent) revisionTemplate(o *workloadObj, name string) *v1.PodTemplateSpec {
	for _, r := range o.revisions {
		if r.Name != name {
			continue
		}
		var patch revisionPatch
		if err := json.Unmarshal(r.Data.Raw, &patch); err != nil {
			a.log.Error("workload: statefulset revision unreadable", "revision", name, "error", err)
			break
		}
		return &patch.Spec.Template
	}
	return &o.sts.Spec.Template
}
