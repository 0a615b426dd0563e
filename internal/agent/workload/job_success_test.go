package workload

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func successJob(completions int32, rules ...batchv1.SuccessPolicyRule) *batchv1.Job {
	job := newJob(ptr.To(completions), completions, v1.RestartPolicyNever)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
	return job
}

func TestMatchSuccessPolicyRules(t *testing.T) {
	set := func(indexes ...int) map[int]bool {
		out := map[int]bool{}
		for _, i := range indexes {
			out[i] = true
		}
		return out
	}
	rule := func(indexes string, count int32) batchv1.SuccessPolicyRule {
		var r batchv1.SuccessPolicyRule
		if indexes != "" {
			r.SucceededIndexes = ptr.To(indexes)
		}
		if count > 0 {
			r.SucceededCount = ptr.To(count)
		}
		return r
	}
	for _, tc := range []struct {
		name      string
		rules     []batchv1.SuccessPolicyRule
		succeeded map[int]bool
		want      string
	}{
		{"indexes: all of them", []batchv1.SuccessPolicyRule{rule("0,2-3", 0)}, set(0, 2, 3), "Matched rules at index 0"},
		{"indexes: one missing", []batchv1.SuccessPolicyRule{rule("0,2-3", 0)}, set(0, 1, 2, 4), ""},
		{"count alone", []batchv1.SuccessPolicyRule{rule("", 2)}, set(3, 4), "Matched rules at index 0"},
		{"count alone, too few", []batchv1.SuccessPolicyRule{rule("", 3)}, set(3, 4), ""},
		{"count of the indexes", []batchv1.SuccessPolicyRule{rule("1-3", 2)}, set(0, 1, 4, 3), "Matched rules at index 0"},
		{"count of the indexes: others do not count", []batchv1.SuccessPolicyRule{rule("1-3", 2)}, set(0, 1, 4), ""},
		{"the first rule met decides", []batchv1.SuccessPolicyRule{rule("4", 0), rule("", 1), rule("0", 0)}, set(0), "Matched rules at index 1"},
		{"indexes beyond completions are skipped", []batchv1.SuccessPolicyRule{rule("7", 0)}, set(0), ""},
		{"nothing succeeded", []batchv1.SuccessPolicyRule{rule("", 0)}, set(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, met := matchSuccessPolicy(successJob(5, tc.rules...), tc.succeeded)
			if got != tc.want || met != (tc.want != "") {
				t.Fatalf("got %q %v, want %q", got, met, tc.want)
			}
		})
	}
}

// A met rule: SuccessCriteriaMet (SuccessPolicy), the other pods deleted;
// Complete with the same reason and message once none runs, the deleted
// pods not judged as failures (backoffLimit 0 here).
func TestSuccessPolicyTerminatesTheRestThenCompletes(t *testing.T) {
	job := successJob(3, batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0")})
	job.Spec.BackoffLimit = ptr.To(int32(0))
	pods := []JobPod{indexPod("a", v1.PodSucceeded, 0, 0, 0), indexPod("b", v1.PodRunning, 1, 0, 0), indexPod("c", v1.PodRunning, 2, 0, 0)}
	got := ReconcileJob(job, pods, jobNow)
	if jobCond(got.Status, batchv1.JobSuccessCriteriaMet) != JobReasonSuccessPolicy || !slices.Equal(got.Delete, []string{"b", "c"}) ||
		jobCond(got.Status, batchv1.JobComplete) != "-" || len(got.Create) != 0 {
		t.Fatalf("rule met: SuccessCriteriaMet, b and c deleted, not Complete yet; status %+v delete %v", got.Status, got.Delete)
	}
	if c := findCondition(&got.Status, batchv1.JobSuccessCriteriaMet); c.Message != "Matched rules at index 0" {
		t.Fatalf("message %q", c.Message)
	}
	job.Status = got.Status
	pods[1].Deleting, pods[2].Deleting = true, true
	got = ReconcileJob(job, pods, jobNow)
	if jobCond(got.Status, batchv1.JobComplete) != "-" || jobCond(got.Status, batchv1.JobFailureTarget) != "-" {
		t.Fatalf("pods terminating: neither Complete nor failing; %+v", got.Status.Conditions)
	}
	job.Status = got.Status
	pods[1] = indexPod("b", v1.PodFailed, 1, 0, 0)
	pods[2] = indexPod("c", v1.PodFailed, 2, 0, 0)
	got = ReconcileJob(job, pods, jobNow.Add(time.Second))
	if jobCond(got.Status, batchv1.JobComplete) != JobReasonSuccessPolicy || got.Status.CompletionTime == nil || jobCond(got.Status, batchv1.JobFailed) != "-" {
		t.Fatalf("none left: Complete (SuccessPolicy); %+v", got.Status)
	}
	if c := findCondition(&got.Status, batchv1.JobComplete); c.Message != "Matched rules at index 0" {
		t.Fatalf("Complete message %q", c.Message)
	}
}

// A Job suspended after its success criteria were met still completes
// once its pods are gone (upstream decides success before suspension).
func TestSuccessCriteriaMetCompletesASuspendedJob(t *testing.T) {
	job := successJob(2, batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0")})
	pods := []JobPod{indexPod("a", v1.PodSucceeded, 0, 0, 0), indexPod("b", v1.PodRunning, 1, 0, 0)}
	job.Status = ReconcileJob(job, pods, jobNow).Status
	job.Spec.Suspend = ptr.To(true)
	pods[1] = indexPod("b", v1.PodFailed, 1, 0, 0)
	got := ReconcileJob(job, pods, jobNow.Add(time.Second))
	if jobCond(got.Status, batchv1.JobComplete) != JobReasonSuccessPolicy {
		t.Fatalf("suspended after SuccessCriteriaMet: %+v; want Complete (SuccessPolicy)", got.Status.Conditions)
	}
}
