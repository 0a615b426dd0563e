package agent

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/claims"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// dirObject is a workload, Service or claim that came from a watched
// directory: its annotation AnnotationWatchDir names the directory.
type dirObject struct {
	kind, namespace, name string
	dir                   string
	source                string       // its file; "" for a claim (the store keeps none)
	workload              *workloadObj // for a workload
}

// markFromDir records on each workload, Service and claim of b that it
// comes from dir. The annotation is saved with the object before the
// agent acts on it, so a restarted agent knows which directory to watch
// again and what a rescan may delete.
func markFromDir(b *manifest.Bundle, dir string) {
	for _, w := range b.Workloads() {
		if w.Meta.Annotations == nil {
			w.Meta.Annotations = map[string]string{}
		}
		w.Meta.Annotations[AnnotationWatchDir] = dir
	}
}

// dirObjectsLocked lists the workloads, Services and claims that came
// from dir ("" for every directory) and are not being deleted: workloads
// first, then Services, then claims.
func (a *Agent) dirObjectsLocked(dir string) []dirObject {
	from := func(annotations map[string]string) bool {
		d, found := annotations[AnnotationWatchDir]
		return found && d != "" && (dir == "" || d == dir)
	}
	var out []dirObject
	for _, o := range a.sortedWorkloadsLocked() {
		m := o.meta()
		if m.DeletionTimestamp == nil && metav1.GetControllerOf(m) == nil && from(m.Annotations) {
			out = append(out, dirObject{kind: o.kind(), namespace: m.Namespace, name: m.Name, dir: m.Annotations[AnnotationWatchDir], source: o.source, workload: o})
		}
	}
	for _, o := range a.sortedServicesLocked() {
		if from(o.svc.Annotations) {
			out = append(out, dirObject{kind: agentapi.KindService, namespace: o.svc.Namespace, name: o.svc.Name, dir: o.svc.Annotations[AnnotationWatchDir], source: o.source})
		}
	}
	list, err := a.claims.store.List()
	if err != nil {
		a.log.Error("watched directory: list claims", "dir", dir, "error", err)
	}
	for _, c := range list {
		if c.Deleting == nil && c.Phase != claims.Released && c.Owner == "" && from(c.Annotations) {
			out = append(out, dirObject{kind: agentapi.KindPersistentVolumeClaim, namespace: c.Namespace, name: c.Name, dir: c.Annotations[AnnotationWatchDir]})
		}
	}
	return out
}

// objectDirsLocked adds to dirs the directories the workloads, Services
// and claims came from (recovery watches them again).
func (a *Agent) objectDirsLocked(dirs map[string]bool) {
	for _, o := range a.dirObjectsLocked("") {
		dirs[o.dir] = true
	}
}

// pruneDirLocked deletes the workloads and Services that came from dir
// and have been missing from it long enough (gone), each as 'berth
// delete' deletes it (a Deployment with its ReplicaSets and pods...) but
// for a StatefulSet's claims, kept (deleteDirObjectLocked). Objects of
// files in keep (files with problems) stay. Claims are never deleted by a
// scan: a claim deleted by mistake takes its data with it, and a scan can
// see a directory half-written (a checkout under way, a file rewritten in
// place) or empty (a mount not yet there); a claim whose manifest is gone
// is logged and kept until 'berth delete pvc' or 'berth delete -f DIR'.
func (a *Agent) pruneDirLocked(dir string, b *manifest.Bundle, keep []string, gone *absenceScan) []agentapi.ApplyResult {
	wanted := map[string]bool{}
	for _, w := range b.Workloads() {
		wanted[w.Kind+" "+manifest.ObjectKey(w.Meta.Namespace, w.Meta.Name)] = true
	}
	var results []agentapi.ApplyResult
	for _, o := range a.dirObjectsLocked(dir) {
		switch {
		case wanted[o.kind+" "+manifest.ObjectKey(o.namespace, o.name)], o.source != "" && slices.Contains(keep, o.source):
			continue
		case o.kind == agentapi.KindPersistentVolumeClaim:
			a.log.Warn("watched directory: a claim's manifest is gone; the claim and its data are kept: delete it with 'berth delete pvc'", "dir", dir, "claim", o.namespace+"/"+o.name)
			continue
		case !gone.confirmed(o.kind, o.namespace, o.name):
			continue
		}
		resp, err := a.deleteDirObjectLocked(o, true)
		if err != nil {
			a.log.Error("watched directory: deleting an object whose manifest was removed", "dir", dir, "object", o.kind+" "+o.namespace+"/"+o.name, "error", err)
			continue
		}
		results = append(results, resp.Deleted...)
	}
	return results
}

// deleteDirObjectLocked deletes an object as 'berth delete' does, but a
// StatefulSet deleted by a scan keeps its claims whatever its whenDeleted
// says (markClaimsKept): a scan may be wrong about a file being gone, a
// claim's data cannot come back.
func (a *Agent) deleteDirObjectLocked(o dirObject, byScan bool) (agentapi.DeleteResponse, error) {
	switch o.kind {
	case agentapi.KindService:
		return a.deleteServiceLocked(o.namespace, o.name)
	case agentapi.KindPersistentVolumeClaim:
		return a.deleteClaimAPILocked(o.namespace, o.name)
	}
	if byScan && o.workload.sts != nil {
		undo := markClaimsKept(o.workload)
		resp, err := a.deleteWorkloadLocked(o.workload, nil) // saves the mark with the deletion
		if err != nil {
			undo()
			return resp, err
		}
		a.log.Warn("watched directory: a StatefulSet deleted by a scan keeps its claims and their data, whatever whenDeleted says: 'berth delete -f' of the directory releases them as whenDeleted says, 'berth delete pvc' one by one",
			"dir", o.dir, "statefulset", o.namespace+"/"+o.name)
		return resp, nil
	}
	return a.deleteWorkloadLocked(o.workload, nil)
}
