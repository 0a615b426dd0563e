package manifest

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/workload"
)

// Limits of the API server's batch validation.
const (
	maxIndexedCompletions = 100000
	maxCronJobNameLength  = 52 // 63 minus the 11 characters of "-<minutes>"
	maxJobNameLength      = 63 // the job-name label
)

// jobProblems validates the Jobs and CronJobs, their pod templates as
// pods, and the templates' references into the bundle.
func (b *Bundle) jobProblems() []Problem {
	var problems []Problem
	for _, j := range b.Jobs {
		errs := validateObjectMeta(&j.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, maxLength(j.Name, maxJobNameLength, field.NewPath("metadata", "name"))...)
		errs = append(errs, validateJobSpec(&j.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferencesAt(j.Namespace, &j.Spec.Template, "spec.template.")...)
		problems = append(problems, fieldProblems(j.Source, objectName(kindJob, &j.ObjectMeta), errs)...)
	}
	for _, cj := range b.CronJobs {
		errs := validateObjectMeta(&cj.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, maxLength(cj.Name, maxCronJobNameLength, field.NewPath("metadata", "name"))...)
		errs = append(errs, validateCronJobSpec(&cj.Spec, field.NewPath("spec"))...)
		errs = append(errs, b.templateReferencesAt(cj.Namespace, &cj.Spec.JobTemplate.Spec.Template, "spec.jobTemplate.spec.template.")...)
		problems = append(problems, fieldProblems(cj.Source, objectName(kindCronJob, &cj.ObjectMeta), errs)...)
	}
	return problems
}

// templateReferencesAt checks a template's references to ConfigMaps and
// Secrets as a pod's, with the template's field paths.
func (b *Bundle) templateReferencesAt(namespace string, template *v1.PodTemplateSpec, prefix string) field.ErrorList {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: template.Spec}
	errs := b.validateReferences(pod)
	for _, e := range errs {
		e.Field = prefix + e.Field
	}
	return errs
}

func maxLength(name string, limit int, path *field.Path) field.ErrorList {
	if len(name) > limit {
		return field.ErrorList{field.TooLong(path, name, limit)}
	}
	return nil
}

// validateJobSpec checks a Job's spec as the API server does; what berth
// does not implement (a manual selector, managedBy) is refused, naming the
// field.
func validateJobSpec(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{spec.Parallelism, "parallelism"}, {spec.Completions, "completions"}, {spec.BackoffLimit, "backoffLimit"}, {spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}} {
		if f.v != nil {
			errs = append(errs, nonNegative(int64(*f.v), path.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*spec.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds"))...)
	}
	errs = append(errs, validateCompletionMode(spec, path)...)
	errs = append(errs, validateBackoffLimitPerIndex(spec, path)...)
	errs = append(errs, validateSuccessPolicy(spec, path)...)
	errs = append(errs, unsupportedJobFields(spec, path)...)
	errs = append(errs, validatePodFailurePolicy(spec, path)...)
	tpl := path.Child("template")
	errs = append(errs, validateLabelMap(spec.Template.Labels, tpl.Child("metadata", "labels"))...)
	errs = append(errs, validateAnnotations(spec.Template.Annotations, tpl.Child("metadata", "annotations"))...)
	errs = append(errs, validatePodSpec(&spec.Template.Spec, tpl.Child("spec"))...)
	if rp := spec.Template.Spec.RestartPolicy; spec.PodFailurePolicy == nil && rp != v1.RestartPolicyOnFailure && rp != v1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(tpl.Child("spec", "restartPolicy"), rp, []string{string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	return errs
}

func validateCompletionMode(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	if spec.CompletionMode == nil {
		return nil
	}
	errs := validateEnum(path.Child("completionMode"), *spec.CompletionMode, batchv1.NonIndexedCompletion, batchv1.IndexedCompletion)
	if *spec.CompletionMode != batchv1.IndexedCompletion {
		return errs
	}
	switch {
	case spec.Completions == nil:
		errs = append(errs, field.Required(path.Child("completions"), "when completion mode is Indexed"))
	case *spec.Completions > maxIndexedCompletions:
		errs = append(errs, field.Invalid(path.Child("completions"), *spec.Completions, "must be less than or equal to 100000 when completion mode is Indexed"))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxIndexedCompletions {
		errs = append(errs, field.Invalid(path.Child("parallelism"), *spec.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
	}
	return errs
}

func unsupportedJobFields(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, name, why string) {
		if set {
			errs = append(errs, field.Forbidden(path.Child(name), why))
		}
	}
	forbid(spec.ManualSelector != nil && *spec.ManualSelector, "manualSelector", "berth generates the Job's selector")
	forbid(spec.ManagedBy != nil, "managedBy", "berth's job controller manages every Job")
	if spec.Selector != nil && (spec.ManualSelector == nil || !*spec.ManualSelector) {
		errs = append(errs, field.Invalid(path.Child("selector"), spec.Selector, "`selector` not auto-generated"))
	}
	if p := spec.PodReplacementPolicy; p != nil {
		errs = append(errs, validateEnum(path.Child("podReplacementPolicy"), *p, batchv1.TerminatingOrFailed, batchv1.Failed)...)
	}
	return errs
}

// validateCronJobSpec checks a CronJob's spec as the API server does:
// schedule (cron.ParseStandard, no TZ= prefix), timeZone, policies,
// limits, and its jobTemplate as a Job's spec.
func validateCronJobSpec(spec *batchv1.CronJobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), ""))
	} else if schedErr, zoneErr := workload.CheckSchedule(spec.Schedule, spec.TimeZone); schedErr != nil || zoneErr != nil {
		if schedErr != nil {
			errs = append(errs, field.Invalid(path.Child("schedule"), spec.Schedule, schedErr.Error()))
		}
		if zoneErr != nil {
			errs = append(errs, field.Invalid(path.Child("timeZone"), *spec.TimeZone, zoneErr.Error()))
		}
	}
	errs = append(errs, validateEnum(path.Child("concurrencyPolicy"), spec.ConcurrencyPolicy, batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent)...)
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*spec.StartingDeadlineSeconds, path.Child("startingDeadlineSeconds"))...)
	}
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.SuccessfulJobsHistoryLimit), path.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.FailedJobsHistoryLimit), path.Child("failedJobsHistoryLimit"))...)
	}
	jt := path.Child("jobTemplate")
	errs = append(errs, validateLabelMap(spec.JobTemplate.Labels, jt.Child("metadata", "labels"))...)
	errs = append(errs, validateAnnotations(spec.JobTemplate.Annotations, jt.Child("metadata", "annotations"))...)
	return append(errs, validateJobSpec(&spec.JobTemplate.Spec, jt.Child("spec"))...)
}
