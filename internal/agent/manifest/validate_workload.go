package manifest

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// workloadProblems validates the Deployments and ReplicaSets, their pod
// templates as pods, and the templates' references into the bundle.
func (b *Bundle) workloadProblems() []Problem {
	var problems []Problem
	for _, d := range b.Deployments {
		errs := validateObjectMeta(&d.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferences(d.Namespace, &d.Spec.Template)...)
		problems = append(problems, fieldProblems(d.Source, objectName(kindDeployment, &d.ObjectMeta), errs)...)
	}
	for _, rs := range b.ReplicaSets {
		errs := validateObjectMeta(&rs.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferences(rs.Namespace, &rs.Spec.Template)...)
		problems = append(problems, fieldProblems(rs.Source, objectName(kindReplicaSet, &rs.ObjectMeta), errs)...)
	}
	return problems
}

// templateReferences checks a template's references to ConfigMaps and
// Secrets as a pod's, with the template's field paths.
func (b *Bundle) templateReferences(namespace string, template *v1.PodTemplateSpec) field.ErrorList {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: template.Spec}
	errs := b.validateReferences(pod)
	for _, e := range errs {
		e.Field = "spec.template." + e.Field
	}
	return errs
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, path *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, path.Child("replicas"))
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, path)...)
	errs = append(errs, validateStrategy(&spec.Strategy, path.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if p := spec.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, nonNegative(int64(*p), path.Child("progressDeadlineSeconds"))...)
		if *p <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, path *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, path.Child("replicas"))
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	return append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, path)...)
}

func validateReplicas(replicas *int32, path *field.Path) field.ErrorList {
	if replicas == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	return nonNegative(int64(*replicas), path)
}

func nonNegative(value int64, path *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(path, value, "must be greater than or equal to 0")}
	}
	return nil
}

// validateSelectorAndTemplate checks the selector (required, not empty,
// matching the template's labels) and the template as a pod's metadata and
// spec with restartPolicy Always, as the API server does for apps/v1.
func validateSelectorAndTemplate(selector *metav1.LabelSelector, template *v1.PodTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath, tplPath := path.Child("selector"), path.Child("template")
	switch {
	case selector == nil:
		errs = append(errs, field.Required(selPath, ""))
	case len(selector.MatchLabels)+len(selector.MatchExpressions) == 0:
		errs = append(errs, field.Invalid(selPath, selector, "empty selector is invalid for deployment"))
	default:
		selErrs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, selPath)
		errs = append(errs, selErrs...)
		if sel, err := metav1.LabelSelectorAsSelector(selector); len(selErrs) == 0 && err == nil && !sel.Matches(labels.Set(template.Labels)) {
			errs = append(errs, field.Invalid(tplPath.Child("metadata", "labels"), template.Labels, "`selector` does not match template `labels`"))
		}
	}
	meta := tplPath.Child("metadata")
	errs = append(errs, validateLabelMap(template.Labels, meta.Child("labels"))...)
	errs = append(errs, validateAnnotations(template.Annotations, meta.Child("annotations"))...)
	spec := tplPath.Child("spec")
	errs = append(errs, validatePodSpec(&template.Spec, spec)...)
	if template.Spec.RestartPolicy != v1.RestartPolicyAlways && template.Spec.RestartPolicy != "" {
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), template.Spec.RestartPolicy, []string{string(v1.RestartPolicyAlways)}))
	}
	if template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validateStrategy checks a Deployment's strategy: its type, and for
// RollingUpdate maxSurge and maxUnavailable (an int or a percentage, not
// negative, not both zero, maxUnavailable at most 100%).
func validateStrategy(s *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("type"), s.Type, appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType)
	ru, ruPath := s.RollingUpdate, path.Child("rollingUpdate")
	switch {
	case s.Type == appsv1.RecreateDeploymentStrategyType && ru != nil:
		return append(errs, field.Forbidden(ruPath, "may not be specified when strategy `type` is 'Recreate'"))
	case s.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil:
		return errs
	}
	surge, surgeErrs := intOrPercent(ru.MaxSurge, ruPath.Child("maxSurge"))
	unavailable, unErrs := intOrPercent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))
	errs = append(append(errs, surgeErrs...), unErrs...)
	if ru.MaxUnavailable != nil && ru.MaxUnavailable.Type == intstr.String && unavailable > 100 {
		errs = append(errs, field.Invalid(ruPath.Child("maxUnavailable"), ru.MaxUnavailable.String(), "must not be greater than 100%"))
	}
	if len(surgeErrs)+len(unErrs) == 0 && surge == 0 && unavailable == 0 {
		errs = append(errs, field.Invalid(ruPath.Child("maxUnavailable"), ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return errs
}

// intOrPercent reads an int or "N%" value, not negative.
func intOrPercent(v *intstr.IntOrString, path *field.Path) (int, field.ErrorList) {
	if v == nil {
		return 0, field.ErrorList{field.Required(path, "")}
	}
	n := v.IntValue()
	if v.Type == intstr.String {
		digits, isPercent := strings.CutSuffix(v.StrVal, "%")
		if !isPercent || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return 0, field.ErrorList{field.Invalid(path, v.StrVal, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%')")}
		}
		n = (&intstr.IntOrString{Type: intstr.String, StrVal: digits}).IntValue()
	}
	if n < 0 {
		return n, field.ErrorList{field.Invalid(path, v.String(), "must be greater than or equal to 0")}
	}
	return n, nil
}
