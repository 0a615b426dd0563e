package workload

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/internal/agent/nodefit"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// DaemonPod is a pod a DaemonSet owns, with its controller-revision-hash
// label.
type DaemonPod struct {
	Pod
	Hash string
}

// DaemonSetActions is what a DaemonSet's reconcile asks for.
type DaemonSetActions struct {
	// Create asks for one pod made from Template.
	Create bool
	// Template is the pod template of the current revision (with its hash
	// label, the daemon tolerations and the node's affinity).
	Template *v1.PodTemplateSpec
	// Hash is the current revision's controller-revision-hash.
	Hash string
	// Delete names the pods to delete: finished ones, the extra ones,
	// outdated ones a rolling update replaces, or every one when the pod
	// should not run on the node.
	Delete []string
	Status appsv1.DaemonSetStatus
	Events []Event
}

// ReconcileDaemonSet compares the pods a DaemonSet owns with what it asks
// of the one node: one pod when its template's nodeSelector, node affinity
// and tolerations (with the daemon tolerations added) let it run there,
// none otherwise, replaced by its update strategy when the template
// changed. A DaemonSet being deleted deletes every pod it owns.
func ReconcileDaemonSet(ds *appsv1.DaemonSet, node *v1.Node, pods []DaemonPod, now time.Time) DaemonSetActions {
	hash := ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	out := DaemonSetActions{Hash: hash, Template: DaemonPodTemplate(ds, node.Name, hash)}
	shouldRun, shouldContinue := false, false
	if ds.DeletionTimestamp == nil {
		shouldRun, shouldContinue = ShouldRunDaemonPod(out.Template, node)
	}
	var running []DaemonPod
	exists := false
	for _, p := range pods {
		if p.Deleting {
			// a terminating pod still holds the node; a finished one not
			exists = exists || (p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed)
			continue
		}
		exists = true
		switch p.Phase {
		case v1.PodFailed:
			out.Delete = append(out.Delete, p.Name)
			out.Events = append(out.Events, Event{Reason: "FailedDaemonPod", Message: fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", ds.Namespace, p.Name, node.Name)})
		case v1.PodSucceeded:
			out.Delete = append(out.Delete, p.Name)
			out.Events = append(out.Events, Event{Reason: "SucceededDaemonPod", Message: fmt.Sprintf("Found succeeded daemon pod %s/%s on node %s, will try to delete it", ds.Namespace, p.Name, node.Name)})
		default:
			running = append(running, p)
		}
	}
	switch {
	case !shouldContinue:
		for _, p := range running {
			out.Delete = append(out.Delete, p.Name)
		}
	case shouldRun && !exists:
		out.Create = true
	default:
		out.keepOne(ds, running, shouldRun, now)
	}
	out.Status = daemonSetStatus(ds, pods, hash, shouldRun, now)
	return out
}

// keepOne leaves one running pod of the current revision on the node, by
// the update strategy: without surge, the oldest pod stays and an
// outdated one is deleted before its replacement is made; with surge, the
// replacement is made first and the old pod deleted once it is available.
func (a *DaemonSetActions) keepOne(ds *appsv1.DaemonSet, running []DaemonPod, shouldRun bool, now time.Time) {
	sort.SliceStable(running, func(i, j int) bool { return running[i].Created.Before(running[j].Created) })
	surge := daemonSurge(ds) > 0
	if !surge {
		for _, p := range running[min(1, len(running)):] {
			a.Delete = append(a.Delete, p.Name)
		}
		if len(running) > 0 && rollingUpdate(ds) && running[0].Hash != a.Hash {
			a.Delete = append(a.Delete, running[0].Name)
		}
		return
	}
	if len(running) == 0 {
		a.Create = shouldRun
		return
	}
	var oldPods, newPods []DaemonPod
	for _, p := range running {
		if p.Hash == a.Hash {
			newPods = append(newPods, p)
		} else {
			oldPods = append(oldPods, p)
		}
	}
	switch {
	case len(newPods) == 0 && rollingUpdate(ds):
		a.Create = true // surge: the new pod first
		for _, p := range oldPods[1:] {
			a.Delete = append(a.Delete, p.Name)
		}
	case len(newPods) == 0: // OnDelete: the oldest stays
		for _, p := range oldPods[1:] {
			a.Delete = append(a.Delete, p.Name)
		}
	default:
		for _, p := range newPods[1:] {
			a.Delete = append(a.Delete, p.Name)
		}
		if newPods[0].available(ds.Spec.MinReadySeconds, now) {
			for _, p := range oldPods {
				a.Delete = append(a.Delete, p.Name)
			}
		}
	}
}

// rollingUpdate says whether the DaemonSet replaces outdated pods itself.
func rollingUpdate(ds *appsv1.DaemonSet) bool {
	return ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType
}

// daemonSurge is maxSurge resolved against the one node (rounded up).
func daemonSurge(ds *appsv1.DaemonSet) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if !rollingUpdate(ds) || ru == nil || ru.MaxSurge == nil {
		return 0
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 1, true)
	if err != nil {
		return 0
	}
	return s
}

// ShouldRunDaemonPod is the daemon set controller's verdict for the node:
// whether a new pod should run there (nodeSelector, node affinity and the
// NoSchedule and NoExecute taints), and whether a running one may stay
// (it fits, but for NoSchedule taints it does not tolerate).
func ShouldRunDaemonPod(template *v1.PodTemplateSpec, node *v1.Node) (shouldRun, shouldContinue bool) {
	pod := &v1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	r := nodefit.Admit(pod, node)
	switch {
	case r.Admit:
		return true, true
	case r.Reason != nodefit.ReasonTaintToleration:
		return false, false
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute && !podspec.Tolerates(pod.Spec.Tolerations, &t) {
			return false, false
		}
	}
	return false, true
}
