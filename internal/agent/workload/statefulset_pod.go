package workload

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the StatefulSet controller puts on its pods.
const (
	StatefulSetPodNameLabel = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel           = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
	RevisionLabel           = appsv1.ControllerRevisionHashLabelKey
)

// StatefulSetPodName is the name of the set's pod of an ordinal.
func StatefulSetPodName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// StatefulSetOrdinal reads the ordinal from a pod name of the set; ok is
// false for a name the set would not give.
func StatefulSetOrdinal(set *appsv1.StatefulSet, podName string) (ordinal int, ok bool) {
	digits, found := strings.CutPrefix(podName, set.Name+"-")
	if !found || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ClaimName is the claim a set's pod of an ordinal gets from a claim
// template: "<template>-<set>-<ordinal>".
func ClaimName(templateName string, set *appsv1.StatefulSet, ordinal int) string {
	return templateName + "-" + StatefulSetPodName(set, ordinal)
}

// ClaimOrdinal reads the ordinal from the name of a claim the set's pods
// would use ("<template>-<set>-<ordinal>" of one of its claim templates);
// ok is false for any other name.
func ClaimOrdinal(set *appsv1.StatefulSet, claim string) (ordinal int, ok bool) {
	for _, t := range set.Spec.VolumeClaimTemplates {
		if podName, found := strings.CutPrefix(claim, t.Name+"-"); found {
			if ord, ok := StatefulSetOrdinal(set, podName); ok {
				return ord, true
			}
		}
	}
	return 0, false
}

// StatefulSetUsesClaim says whether a pod the set wants (an ordinal in
// [start, start+replicas)) uses the claim of that name: the controller
// finds a pod's claims by name, whatever made them.
func StatefulSetUsesClaim(set *appsv1.StatefulSet, claim string) bool {
	ord, ok := ClaimOrdinal(set, claim)
	start, replicas := statefulSetOrdinals(set)
	return ok && ord >= start && ord < start+replicas
}

// RevisionName is the name of the set's ControllerRevision of a template:
// "<set>-<hash>", the value of the pods' controller-revision-hash label.
func RevisionName(set *appsv1.StatefulSet, template *v1.PodTemplateSpec) string {
	return set.Name + "-" + ComputeHash(template, set.Status.CollisionCount)
}

// StatefulSetClaims are the claims the pod of an ordinal needs, as the
// controller makes them from the claim templates: the template's spec,
// its labels with the set's selector labels, in the set's namespace.
func StatefulSetClaims(set *appsv1.StatefulSet, ordinal int) []*v1.PersistentVolumeClaim {
	out := make([]*v1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c := &v1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: ClaimName(t.Name, set, ordinal), Namespace: set.Namespace, Labels: t.Labels, Annotations: t.Annotations},
			Spec:       t.Spec,
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels = withLabel(c.Labels, k, v)
			}
		}
		out = append(out, c)
	}
	return out
}

// NewStatefulSetPod is the set's pod of an ordinal from a revision's
// template: named "<set>-<ordinal>", with hostname the pod's name and
// subdomain the set's serviceName, the pod-name, pod-index and
// controller-revision-hash labels, a volume per claim template and a
// controller ownerReference to the set. The caller gives it a uid.
func NewStatefulSetPod(set *appsv1.StatefulSet, template *v1.PodTemplateSpec, revision string, ordinal int) *v1.Pod {
	t := template.DeepCopy()
	name := StatefulSetPodName(set, ordinal)
	labels := withLabel(t.Labels, StatefulSetPodNameLabel, name)
	labels[PodIndexLabel] = strconv.Itoa(ordinal)
	labels[RevisionLabel] = revision
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace, Labels: labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Spec: t.Spec,
	}
	pod.Spec.Hostname, pod.Spec.Subdomain = name, set.Spec.ServiceName
	pod.Spec.Volumes = StatefulSetPodVolumes(pod.Spec.Volumes, set.Spec.VolumeClaimTemplates, func(tpl string) string { return ClaimName(tpl, set, ordinal) })
	return pod
}

// StatefulSetPodVolumes is a pod's volumes: the template's, with one
// persistentVolumeClaim volume per claim template, named after the
// template and claiming claimName(template name), in place of a template
// volume of the same name, as the StatefulSet controller does.
func StatefulSetPodVolumes(volumes []v1.Volume, templates []v1.PersistentVolumeClaim, claimName func(string) string) []v1.Volume {
	out := make([]v1.Volume, 0, len(volumes)+len(templates))
	claimed := map[string]bool{}
	for _, t := range templates {
		claimed[t.Name] = true
	}
	for _, v := range volumes {
		if !claimed[v.Name] {
			out = append(out, v)
		}
	}
	for _, t := range templates {
		out = append(out, v1.Volume{Name: t.Name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(t.Name)},
		}})
	}
	return out
}
