package agent

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/errdefs"
)

// applyStatefulSetsLocked creates or updates the bundle's StatefulSets.
func (a *Agent) applyStatefulSetsLocked(b *manifest.Bundle) ([]agentapi.ApplyResult, error) {
	var results []agentapi.ApplyResult
	for _, s := range b.StatefulSets {
		obj := s.DeepCopy()
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: workloadstore.KindStatefulSet}
		r, err := a.applyWorkloadLocked(&workloadObj{sts: obj, source: s.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// statefulSetUpdateProblems refuses what the API server refuses of a
// StatefulSet update: any spec field but replicas, ordinals, template,
// updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy
// and minReadySeconds.
func (a *Agent) statefulSetUpdateProblems(b *manifest.Bundle) []manifest.Problem {
	var problems []manifest.Problem
	for _, s := range b.StatefulSets {
		cur := a.liveWorkloadLocked(workloadstore.KindStatefulSet, s.Namespace, s.Name)
		if cur == nil {
			continue
		}
		was, next := cur.sts.Spec.DeepCopy(), s.Spec.DeepCopy()
		for _, spec := range []*appsv1.StatefulSetSpec{was, next} {
			spec.Replicas, spec.Ordinals, spec.Template, spec.UpdateStrategy = nil, nil, next.Template, appsv1.StatefulSetUpdateStrategy{}
			spec.RevisionHistoryLimit, spec.PersistentVolumeClaimRetentionPolicy, spec.MinReadySeconds = nil, nil, 0
		}
		if !apiequality.Semantic.DeepEqual(was, next) {
			problems = append(problems, manifest.Problem{Source: s.Source, Object: "StatefulSet " + s.Namespace + "/" + s.Name,
				Err: field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")})
		}
	}
	return problems
}

// describeStatefulSetLocked is a set with its pods, revisions and events.
func (a *Agent) describeStatefulSetLocked(o *workloadObj) agentapi.WorkloadDetail {
	detail := agentapi.WorkloadDetail{Events: o.events.list(), StatefulSet: o.sts.DeepCopy()}
	for _, r := range o.revisions {
		detail.Revisions = append(detail.Revisions, *r.DeepCopy())
	}
	for _, p := range a.ownedPodsLocked()[o.uid()] {
		detail.Pods = append(detail.Pods, p.pod)
	}
	sort.Slice(detail.Pods, func(i, j int) bool { return detail.Pods[i].Name < detail.Pods[j].Name })
	return detail
}

// listClaimsLocked lists the claims of a namespace (every one when
// empty), Terminating ones included, as the API server does.
func (a *Agent) listClaimsLocked(namespace string) (agentapi.WorkloadList, error) {
	all, err := a.claims.store.List()
	list := agentapi.WorkloadList{}
	for _, c := range all {
		if namespace == "" || c.Namespace == namespace {
			list.PersistentVolumeClaims = append(list.PersistentVolumeClaims, claimObject(c))
		}
	}
	if err != nil {
		a.log.Error("claims: list", "error", err)
	}
	return list, nil
}

// describeClaimLocked is a claim with the pods using it.
func (a *Agent) describeClaimLocked(namespace, name string) (agentapi.WorkloadDetail, error) {
	c, found, err := a.claims.store.Get(namespace, name)
	if err != nil {
		return agentapi.WorkloadDetail{}, err
	}
	if !found {
		return agentapi.WorkloadDetail{}, fmt.Errorf("persistentvolumeclaims %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
	}
	pvc := claimObject(c)
	return agentapi.WorkloadDetail{PersistentVolumeClaim: &pvc, UsedBy: a.claimUsersLocked(namespace, name), Events: []agentapi.Event{}}, nil
}

// deleteClaimAPILocked deletes a claim for the API: Terminating until no
// pod uses it.
func (a *Agent) deleteClaimAPILocked(namespace, name string) (agentapi.DeleteResponse, error) {
	c, err := a.deleteClaimLocked(namespace, name)
	if err != nil {
		return agentapi.DeleteResponse{}, err
	}
	return agentapi.DeleteResponse{Deleted: []agentapi.ApplyResult{{Kind: agentapi.KindPersistentVolumeClaim, Namespace: namespace, Name: name, UID: c.UID, Outcome: agentapi.OutcomeDeleted}}}, nil
}

// rolloutStatefulSetLocked restarts a set (the restartedAt template
// annotation) or rolls it back to a revision's template.
func (a *Agent) rolloutStatefulSetLocked(o *workloadObj, req agentapi.RolloutRequest) (agentapi.ApplyResult, error) {
	next := o.copy()
	if req.Restart {
		t := &next.sts.Spec.Template
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[restartedAtKey] = a.deps.clock.Now().Format(time.RFC3339)
		return a.updateLocked(o, next, outcomeRestarted)
	}
	revs := append([]appsv1.ControllerRevision(nil), o.revisions...)
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision > revs[j].Revision })
	for i, r := range revs {
		if (req.ToRevision == 0 && i == 1) || (req.ToRevision != 0 && r.Revision == req.ToRevision) {
			next.sts.Spec.Template = *a.revisionTemplate(o, r.Name).DeepCopy()
			return a.updateLocked(o, next, outcomeRolledBack)
		}
	}
	what := "no previous revision"
	if req.ToRevision != 0 {
		what = fmt.Sprintf("no revision %d", req.ToRevision)
	}
	return agentapi.ApplyResult{}, fmt.Errorf("rollout undo: StatefulSet %s/%s has %s: %w", o.sts.Namespace, o.sts.Name, what, errdefs.ErrNotFound)
}
