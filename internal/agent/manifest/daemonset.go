package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DaemonSet is a decoded apps/v1 DaemonSet and the source it came from.
type DaemonSet struct {
	*appsv1.DaemonSet
	Source string `json:"source"`
}

// setDaemonSetDefaults defaults a DaemonSet as the API server does
// (apps/v1): RollingUpdate with maxUnavailable 1 and maxSurge 0,
// revisionHistoryLimit 10, and its pod template as a pod's spec.
func setDaemonSetDefaults(ds *appsv1.DaemonSet) {
	if ds.Namespace == "" {
		ds.Namespace = metav1.NamespaceDefault
	}
	s := &ds.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	setFullPodSpecDefaults(&ds.Spec.Template.Spec)
}

// daemonSetProblems validates the DaemonSets, their pod templates as
// pods, and the templates' references into the bundle.
func (b *Bundle) daemonSetProblems() []Problem {
	var problems []Problem
	for _, ds := range b.DaemonSets {
		errs := validateObjectMeta(&ds.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferences(ds.Namespace, &ds.Spec.Template)...)
		problems = append(problems, fieldProblems(ds.Source, objectName(kindDaemonSet, &ds.ObjectMeta), errs)...)
	}
	return problems
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, path *field.Path) field.ErrorList {
	errs := validateSelectorAndTemplate(spec.Selector, &spec.Template, path)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	return append(errs, validateDaemonSetStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
}

// validateDaemonSetStrategy checks the update strategy as the API server
// does: its type, and for RollingUpdate maxUnavailable and maxSurge (an
// int or a percentage, not negative, at most 100%, not both zero).
func validateDaemonSetStrategy(s *appsv1.DaemonSetUpdateStrategy, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("type"), s.Type, appsv1.OnDeleteDaemonSetStrategyType, appsv1.RollingUpdateDaemonSetStrategyType)
	ru, ruPath := s.RollingUpdate, path.Child("rollingUpdate")
	if s.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil {
		return errs
	}
	surge, surgeErrs := intOrPercent(ru.MaxSurge, ruPath.Child("maxSurge"))
	unavailable, unErrs := intOrPercent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))
	errs = append(append(errs, surgeErrs...), unErrs...)
	for _, v := range []struct {
		name  string
		value *intstr.IntOrString
		n     int
	}{{"maxUnavailable", ru.MaxUnavailable, unavailable}, {"maxSurge", ru.MaxSurge, surge}} {
		if v.value != nil && v.value.Type == intstr.String && v.n > 100 {
			errs = append(errs, field.Invalid(ruPath.Child(v.name), v.value.String(), "must not be greater than 100%"))
		}
	}
	switch {
	case len(surgeErrs)+len(unErrs) > 0:
	case surge != 0 && unavailable != 0:
		errs = append(errs, field.Invalid(ruPath.Child("maxSurge"), ru.MaxSurge.String(), "may not be set when maxUnavailable is non-zero"))
	case surge == 0 && unavailable == 0:
		errs = append(errs, field.Required(ruPath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}
