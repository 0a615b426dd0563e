package agent

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
)

// applyJobsLocked creates or updates the bundle's Jobs and CronJobs; an
// applied Job keeps the selector and template labels the agent gave it.
func (a *Agent) applyJobsLocked(b *manifest.Bundle) ([]agentapi.ApplyResult, error) {
	var results []agentapi.ApplyResult
	for _, j := range b.Jobs {
		obj := j.DeepCopy()
		if cur := a.liveWorkloadLocked(workloadstore.KindJob, j.Namespace, j.Name); cur != nil {
			obj = jobTemplateLabels(cur.job, obj)
		}
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: workloadstore.KindJob}
		r, err := a.applyWorkloadLocked(&workloadObj{job: obj, source: j.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	for _, cj := range b.CronJobs {
		obj := cj.DeepCopy()
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: workloadstore.KindCronJob}
		r, err := a.applyWorkloadLocked(&workloadObj{cj: obj, source: cj.Source})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// jobUpdateProblemsLocked refuses what the API server refuses in a Job's
// update: a changed template, completions, completionMode,
// backoffLimitPerIndex or successPolicy.
func (a *Agent) jobUpdateProblemsLocked(b *manifest.Bundle) []manifest.Problem {
	var problems []manifest.Problem
	for _, j := range b.Jobs {
		cur := a.liveWorkloadLocked(workloadstore.KindJob, j.Namespace, j.Name)
		if cur == nil {
			continue
		}
		in := jobTemplateLabels(cur.job, j.Job)
		object := fmt.Sprintf("Job %s/%s", j.Namespace, j.Name)
		spec := field.NewPath("spec")
		for _, f := range []struct {
			path     *field.Path
			cur, new any
		}{
			{spec.Child("template"), &cur.job.Spec.Template, &in.Spec.Template},
			{spec.Child("completions"), cur.job.Spec.Completions, in.Spec.Completions},
			{spec.Child("completionMode"), cur.job.Spec.CompletionMode, in.Spec.CompletionMode},
			{spec.Child("backoffLimitPerIndex"), cur.job.Spec.BackoffLimitPerIndex, in.Spec.BackoffLimitPerIndex},
			{spec.Child("successPolicy"), cur.job.Spec.SuccessPolicy, in.Spec.SuccessPolicy},
		} {
			if !apiequality.Semantic.DeepEqual(f.cur, f.new) {
				problems = append(problems, manifest.Problem{Source: j.Source, Object: object, Err: field.Invalid(f.path, "", "field is immutable")})
			}
		}
	}
	return problems
}

// jobTemplateLabels is an applied Job with the selector and template
// labels the agent gave the Job it holds (cur).
func jobTemplateLabels(cur *batchv1.Job, in *batchv1.Job) *batchv1.Job {
	j := in.DeepCopy()
	j.UID, j.Name = cur.UID, cur.Name
	workload.SetJobSelector(j)
	j.UID = in.UID
	return j
}
