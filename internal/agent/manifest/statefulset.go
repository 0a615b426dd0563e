package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/workload"
)

// StatefulSet is a decoded apps/v1 StatefulSet and the source it came from.
type StatefulSet struct {
	*appsv1.StatefulSet
	Source string `json:"source"`
}

const kindStatefulSet = "StatefulSet"

// maxStatefulSetName keeps "<name>-<hash>" (a hash of up to 10
// characters) a valid label value.
const maxStatefulSetName = 52

// setStatefulSetDefaults defaults a StatefulSet as the API server does
// (apps/v1): replicas 1, OrderedReady, RollingUpdate with partition 0 and
// maxUnavailable 1, revisionHistoryLimit 10, claims retained when deleted
// or scaled, its claim templates as claims and its template as a pod's.
func setStatefulSetDefaults(s *appsv1.StatefulSet) {
	if s.Namespace == "" {
		s.Namespace = metav1.NamespaceDefault
	}
	spec := &s.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptrTo(int32(1))
	}
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		ru := spec.UpdateStrategy.RollingUpdate
		if ru.Partition == nil {
			ru.Partition = ptrTo(int32(0))
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range spec.VolumeClaimTemplates {
		setPVCSpecDefaults(&spec.VolumeClaimTemplates[i].Spec)
	}
	setFullPodSpecDefaults(&spec.Template.Spec)
}

// statefulSetProblems validates the bundle's StatefulSets.
func (b *Bundle) statefulSetProblems() []Problem {
	var problems []Problem
	for _, s := range b.StatefulSets {
		errs := validateObjectMeta(&s.ObjectMeta, field.NewPath("metadata"))
		if len(s.Name) > maxStatefulSetName {
			// Its pods' controller-revision-hash label, "<name>-<hash>", is a label value (63 at most).
			errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), s.Name, maxStatefulSetName))
		}
		errs = append(errs, validateStatefulSetSpec(&s.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferences(s.Namespace, &s.Spec.Template)...)
		problems = append(problems, fieldProblems(s.Source, objectName(kindStatefulSet, &s.ObjectMeta), errs)...)
	}
	return problems
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, path *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, path.Child("replicas"))
	errs = append(errs, validateEnum(path.Child("podManagementPolicy"), spec.PodManagementPolicy, appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)...)
	errs = append(errs, validateStatefulSetStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if spec.Ordinals != nil {
		errs = append(errs, nonNegative(int64(spec.Ordinals.Start), path.Child("ordinals", "start"))...)
	}
	if rp := spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpPath := path.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateEnum(rpPath.Child("whenDeleted"), rp.WhenDeleted, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType)...)
		errs = append(errs, validateEnum(rpPath.Child("whenScaled"), rp.WhenScaled, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType)...)
	}
	seen := map[string]bool{}
	for i := range spec.VolumeClaimTemplates {
		ct, ctPath := &spec.VolumeClaimTemplates[i], path.Child("volumeClaimTemplates").Index(i)
		if ct.Name == "" {
			errs = append(errs, field.Required(ctPath.Child("metadata", "name"), ""))
		} else if seen[ct.Name] {
			errs = append(errs, field.Duplicate(ctPath.Child("metadata", "name"), ct.Name))
		}
		seen[ct.Name] = true
		errs = append(errs, validatePVCSpec(&ct.Spec, ctPath.Child("spec"))...)
		errs = append(errs, validateReclaimAnnotation(ct.Annotations, ctPath.Child("metadata", "annotations"))...)
	}
	// The controller gives each pod a volume per claim template (in place
	// of a template volume of that name); the template is checked with them.
	template := spec.Template.DeepCopy()
	template.Spec.Volumes = workload.StatefulSetPodVolumes(template.Spec.Volumes, spec.VolumeClaimTemplates, func(name string) string { return name })
	return append(errs, validateSelectorAndTemplate(spec.Selector, template, path)...)
}

func validateStatefulSetStrategy(s *appsv1.StatefulSetUpdateStrategy, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("type"), s.Type, appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)
	ru, ruPath := s.RollingUpdate, path.Child("rollingUpdate")
	if ru == nil {
		return errs
	}
	if s.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return append(errs, field.Invalid(ruPath, ru, "only allowed for updateStrategy 'RollingUpdate'"))
	}
	if ru.Partition != nil {
		errs = append(errs, nonNegative(int64(*ru.Partition), ruPath.Child("partition"))...)
	}
	if ru.MaxUnavailable != nil {
		n, muErrs := intOrPercent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))
		errs = append(errs, muErrs...)
		if len(muErrs) == 0 && n == 0 {
			errs = append(errs, field.Invalid(ruPath.Child("maxUnavailable"), ru.MaxUnavailable.String(), "must be greater than 0"))
		}
		if len(muErrs) == 0 && ru.MaxUnavailable.Type == intstr.String && n > 100 {
			errs = append(errs, field.Invalid(ruPath.Child("maxUnavailable"), ru.MaxUnavailable.String(), "must not be greater than 100%"))
		}
	}
	return errs
}
