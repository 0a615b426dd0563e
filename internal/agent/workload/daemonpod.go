package workload

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// daemonTolerations are the tolerations the daemon set controller adds
// to its pods: node problems never keep them off or evict them.
var daemonTolerations = []v1.Toleration{
	{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodePIDPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
}

// networkUnavailableToleration is added for hostNetwork pods only.
var networkUnavailableToleration = v1.Toleration{Key: v1.TaintNodeNetworkUnavailable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}

// DaemonPodTemplate is the template of the DaemonSet's pod on the node,
// as the controller makes it: the controller-revision-hash label, the
// daemon tolerations (added or replacing one of the same key and effect),
// and a required node affinity on the node's name (metadata.name) in
// place of any other matchFields on it.
func DaemonPodTemplate(ds *appsv1.DaemonSet, nodeName, hash string) *v1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	t.Labels = withLabel(t.Labels, appsv1.DefaultDaemonSetUniqueLabelKey, hash)
	tolerations := daemonTolerations
	if t.Spec.HostNetwork {
		tolerations = append(append([]v1.Toleration(nil), daemonTolerations...), networkUnavailableToleration)
	}
	for _, tol := range tolerations {
		addOrUpdateToleration(&t.Spec, tol)
	}
	t.Spec.Affinity = withNodeNameAffinity(t.Spec.Affinity, nodeName)
	return t
}

// addOrUpdateToleration adds tol, or replaces one of the same key,
// operator and effect, as v1helper.AddOrUpdateTolerationInPodSpec.
func addOrUpdateToleration(spec *v1.PodSpec, tol v1.Toleration) {
	for i, cur := range spec.Tolerations {
		if cur.Key == tol.Key && cur.Effect == tol.Effect && (cur.Operator == tol.Operator || (cur.Operator == "" && tol.Operator == v1.TolerationOpEqual)) {
			if apiequality.Semantic.DeepEqual(cur, tol) {
				return
			}
			spec.Tolerations[i] = tol
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, tol)
}

// withNodeNameAffinity binds the pod to the node as the controller does
// (ReplaceDaemonSetPodNodeNameNodeAffinity): every required term keeps its
// label expressions, its matchFields become metadata.name In [node]; no
// term at all becomes that one term.
func withNodeNameAffinity(affinity *v1.Affinity, nodeName string) *v1.Affinity {
	field := []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}}
	if affinity == nil {
		affinity = &v1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: field}}}
		return affinity
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = field
	}
	return affinity
}

// daemonSetStatus counts as the controller does on one node: desired 1
// when the pod should run; the oldest pod not finished is the one current,
// ready, available and updated count.
func daemonSetStatus(ds *appsv1.DaemonSet, pods []DaemonPod, hash string, shouldRun bool, now time.Time) appsv1.DaemonSetStatus {
	s := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount, Conditions: ds.Status.Conditions}
	var scheduled []DaemonPod
	for _, p := range pods {
		if !p.Deleting || (p.Phase != v1.PodFailed && p.Phase != v1.PodSucceeded) { // deleted and finished: gone
			scheduled = append(scheduled, p)
		}
	}
	if !shouldRun {
		if len(scheduled) > 0 {
			s.NumberMisscheduled = 1
		}
		return s
	}
	s.DesiredNumberScheduled = 1
	if len(scheduled) > 0 {
		sort.SliceStable(scheduled, func(i, j int) bool { return scheduled[i].Created.Before(scheduled[j].Created) })
		p := scheduled[0]
		s.CurrentNumberScheduled = 1
		if p.Ready {
			s.NumberReady = 1
			if p.available(ds.Spec.MinReadySeconds, now) {
				s.NumberAvailable = 1
			}
		}
		if p.Hash == hash {
			s.UpdatedNumberScheduled = 1
		}
	}
	s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
	return s
}
