package agent

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/claims"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
)

// annotationClaimsKept marks a StatefulSet deleted by a watched
// directory's scan, saved with its deletion: its claims outlive it
// whatever whenDeleted says. Only 'berth delete pvc', 'delete -f' of the
// directory and the end of its watch release them
// (releaseKeptClaimsLocked).
const annotationClaimsKept = "berth.dev/claims-kept"

// annotationReleaseWithDir marks a claim kept after its StatefulSet,
// whenDeleted Delete, was deleted by a scan of the watched directory the
// value names: deleting that directory's objects ('berth delete -f DIR',
// the end of the watch) releases it, as whenDeleted says. A set that
// adopts the claim drops the mark.
const annotationReleaseWithDir = "berth.dev/release-with-watch-dir"

// markClaimsKept marks a set annotationClaimsKept (saved with the
// deletion that follows); the returned func takes the mark back.
func markClaimsKept(o *workloadObj) (undo func()) {
	m := o.meta()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[annotationClaimsKept] = "true"
	return func() { delete(m.Annotations, annotationClaimsKept) }
}

// ensureSetClaimLocked makes a claim of the set's unless one of that name
// exists: it is used as it is, and adopted when the set that made it is
// gone (a set of this name deleted before, its claims kept), as the
// controller adopts it; a claim being deleted makes the pod wait.
func (a *Agent) ensureSetClaimLocked(o *workloadObj, pvc *v1.PersistentVolumeClaim, podName string) error {
	cur, found, err := a.claims.store.Get(pvc.Namespace, pvc.Name)
	switch {
	case err != nil:
		return err
	case found && cur.Deleting != nil:
		return fmt.Errorf("persistentvolumeclaim %q is being deleted", pvc.Name)
	case found && cur.Owner != "" && cur.Owner != o.uid() && a.workloads[cur.Owner] == nil:
		return a.adoptClaimLocked(o, pvc.Name)
	case found:
		return nil
	}
	pvc.UID = newUID()
	if _, err := a.claims.store.EnsureOwned(pvc, reclaimPolicy(pvc), o.uid()); err != nil {
		return err
	}
	o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", fmt.Sprintf("create Claim %s Pod %s in StatefulSet %s success", pvc.Name, podName, o.sts.Name))
	return nil
}

// adoptClaimLocked makes the set the owner of a claim another set of its
// name made, and drops the claim's annotationReleaseWithDir: from now on
// the set's own whenDeleted decides.
func (a *Agent) adoptClaimLocked(o *workloadObj, name string) error {
	if _, err := a.claims.store.SetOwner(o.sts.Namespace, name, o.uid()); err != nil {
		return err
	}
	if _, err := a.claims.store.Annotate(o.sts.Namespace, name, map[string]string{annotationReleaseWithDir: ""}); err != nil {
		return err
	}
	a.log.Info("workload: a StatefulSet adopts the claim a set of its name made", "statefulset", o.sts.Namespace+"/"+o.sts.Name, "claim", name)
	return nil
}

// ownedClaimsLocked names the claims the set made.
func (a *Agent) ownedClaimsLocked(o *workloadObj) []string {
	list, err := a.claims.store.List()
	if err != nil {
		a.log.Error("claims: list", "error", err)
	}
	var out []string
	for _, c := range list {
		if c.Owner == o.uid() && c.Deleting == nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// finishStatefulSetDeletionLocked forgets a deleted set once its pods are
// gone. The live set of its name, if it was applied again meanwhile,
// adopts the claims its own pods use (its claim templates × its ordinals,
// by name, as the controller finds them) rather than racing their
// deletion. The other claims follow the deleted set's whenDeleted: Delete
// deletes them, unless a scan deleted the set (annotationClaimsKept):
// then they are kept, marked annotationReleaseWithDir.
func (a *Agent) finishStatefulSetDeletionLocked(o *workloadObj, owned []ownedPod) {
	if len(owned) > 0 {
		return
	}
	set := o.sts
	heir := a.liveWorkloadLocked(workloadstore.KindStatefulSet, set.Namespace, set.Name)
	rp := set.Spec.PersistentVolumeClaimRetentionPolicy
	release := rp != nil && rp.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	byScan := set.Annotations[annotationClaimsKept] != ""
	var kept []string
	for _, name := range a.ownedClaimsLocked(o) {
		var err error
		switch {
		case heir != nil && workload.StatefulSetUsesClaim(heir.sts, name):
			err = a.adoptClaimLocked(heir, name)
		case release && !byScan:
			_, err = a.deleteClaimLocked(set.Namespace, name)
		case release:
			kept = append(kept, name)
			_, err = a.claims.store.Annotate(set.Namespace, name, map[string]string{annotationReleaseWithDir: set.Annotations[AnnotationWatchDir]})
		}
		if err != nil {
			a.log.Error("workload: statefulset claim", "claim", set.Namespace+"/"+name, "error", err)
			return
		}
	}
	if len(kept) > 0 {
		a.log.Warn("workload: a StatefulSet deleted by its watched directory's scan keeps its claims, whatever whenDeleted says: 'berth delete -f' of the directory or 'berth delete pvc' releases them",
			"statefulset", set.Namespace+"/"+set.Name, "dir", set.Annotations[AnnotationWatchDir], "claims", kept)
	}
	a.forgetWorkloadLocked(o)
}

// keptByScan is what scans of a directory deleted while keeping claims:
// StatefulSets still terminating, and the claims of those gone.
type keptByScan struct {
	sets   []*workloadObj
	claims []claims.Claim
}

// keptByScanLocked lists what scans of dir kept: the sets deleted by a
// scan still terminating, and the claims marked annotationReleaseWithDir
// whose set is gone (a set that adopted one decides for it).
func (a *Agent) keptByScanLocked(dir string) keptByScan {
	var k keptByScan
	for _, o := range a.sortedWorkloadsLocked() {
		if m := o.meta(); o.sts != nil && m.DeletionTimestamp != nil && m.Annotations[annotationClaimsKept] != "" && m.Annotations[AnnotationWatchDir] == dir {
			k.sets = append(k.sets, o)
		}
	}
	list, err := a.claims.store.List()
	if err != nil {
		a.log.Error("watched directory: list claims", "dir", dir, "error", err)
	}
	for _, c := range list {
		if c.Annotations[annotationReleaseWithDir] == dir && c.Deleting == nil && c.Phase != claims.Released && a.workloads[c.Owner] == nil {
			k.claims = append(k.claims, c)
		}
	}
	return k
}

// releaseKeptLocked gives back to whenDeleted what scans of a directory
// kept, as the directory's objects are deleted: a terminating set loses
// its annotationClaimsKept (its claims go with it if whenDeleted is
// Delete), a kept claim is deleted. It returns the claims deleted.
func (a *Agent) releaseKeptLocked(k keptByScan) ([]agentapi.ApplyResult, error) {
	var errs []error
	for _, o := range k.sets {
		m := o.meta()
		delete(m.Annotations, annotationClaimsKept)
		if err := a.saveLocked(o); err != nil {
			m.Annotations[annotationClaimsKept] = "true"
			errs = append(errs, fmt.Errorf("StatefulSet %s/%s: %w", m.Namespace, m.Name, err))
		}
	}
	var out []agentapi.ApplyResult
	for _, c := range k.claims {
		resp, err := a.deleteClaimAPILocked(c.Namespace, c.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", agentapi.KindPersistentVolumeClaim, c.Namespace, c.Name, err))
			continue
		}
		out = append(out, resp.Deleted...)
	}
	return out, errors.Join(errs...)
}
