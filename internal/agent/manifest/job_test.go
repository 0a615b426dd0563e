package manifest

import (
	"math"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

func jobYAML(spec, podSpec string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: pi\nspec:\n" + spec +
		"  template:\n    spec:\n" + podSpec + "      containers:\n      - name: main\n        image: busybox\n"
}

func cronJobYAML(spec string) string {
	return "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: hello\nspec:\n" + spec +
		"  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: main\n            image: busybox\n"
}

const indexed3 = "  completionMode: Indexed\n  completions: 3\n"

const failurePolicy = `  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
`

func TestJobDefaults(t *testing.T) {
	b := decodeString(t, jobYAML("", "      restartPolicy: Never\n"), "job.yaml")
	if len(b.Jobs) != 1 {
		t.Fatalf("jobs %d", len(b.Jobs))
	}
	s := b.Jobs[0].Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed || b.Jobs[0].Namespace != "default" {
		t.Fatalf("defaults %+v", s)
	}
	b = decodeString(t, jobYAML("  parallelism: 3\n", "      restartPolicy: Never\n"), "job.yaml")
	if s := b.Jobs[0].Spec; s.Completions != nil || *s.Parallelism != 3 {
		t.Fatalf("work queue: completions %v parallelism %v", s.Completions, *s.Parallelism)
	}
	b = decodeString(t, jobYAML(failurePolicy, "      restartPolicy: Never\n"), "job.yaml")
	if s := b.Jobs[0].Spec; *s.PodReplacementPolicy != batchv1.Failed || s.PodFailurePolicy.Rules[1].OnPodConditions[0].Status != v1.ConditionTrue {
		t.Fatalf("with a podFailurePolicy: podReplacementPolicy %v, onPodConditions %+v", *s.PodReplacementPolicy, s.PodFailurePolicy.Rules[1].OnPodConditions)
	}
	b = decodeString(t, jobYAML(indexed3+"  backoffLimitPerIndex: 1\n", "      restartPolicy: Never\n"), "job.yaml")
	if s := b.Jobs[0].Spec; *s.BackoffLimit != math.MaxInt32 {
		t.Fatalf("with backoffLimitPerIndex: backoffLimit %d, want the largest int32", *s.BackoffLimit)
	}
	b = decodeString(t, cronJobYAML("  schedule: \"@hourly\"\n"), "cj.yaml")
	if s := b.CronJobs[0].Spec; s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 || *s.Suspend {
		t.Fatalf("cronjob defaults %+v", s)
	}
	if rp := b.CronJobs[0].Spec.JobTemplate.Spec.Template.Spec.RestartPolicy; rp != v1.RestartPolicyOnFailure {
		t.Fatalf("template restartPolicy %q", rp)
	}
}

func TestJobValidation(t *testing.T) {
	for _, tc := range []struct {
		name, manifests, want string
	}{
		{"restartPolicy Always (the default)", jobYAML("", ""), `job.yaml: Job default/pi: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`},
		{"Indexed without completions", jobYAML("  completionMode: Indexed\n  parallelism: 2\n", "      restartPolicy: Never\n"), "spec.completions: Required value: when completion mode is Indexed"},
		{"negative backoffLimit", jobYAML("  backoffLimit: -1\n", "      restartPolicy: Never\n"), "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"},
		{"selector without manualSelector", jobYAML("  selector:\n    matchLabels:\n      a: b\n", "      restartPolicy: Never\n"), "spec.selector: Invalid value"},
		{"podFailurePolicy with OnFailure", jobYAML(failurePolicy, "      restartPolicy: OnFailure\n"), `spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
		{"podFailurePolicy: 0 with In", jobYAML(strings.Replace(failurePolicy, "[42]", "[0, 42]", 1), "      restartPolicy: Never\n"), "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"},
		{"podFailurePolicy: unordered", jobYAML(strings.Replace(failurePolicy, "[42]", "[42, 7]", 1), "      restartPolicy: Never\n"), "onExitCodes.values[1]: Invalid value: 7: must be ordered"},
		{"podFailurePolicy: both", jobYAML(strings.Replace(failurePolicy, "      onPodConditions: [{type: DisruptionTarget}]\n", "      onPodConditions: [{type: DisruptionTarget}]\n      onExitCodes: {operator: In, values: [1]}\n", 1), "      restartPolicy: Never\n"), "specifying one of OnExitCodes and OnPodConditions is required"},
		{"podFailurePolicy: FailIndex without backoffLimitPerIndex", jobYAML(strings.Replace(failurePolicy, "action: FailJob", "action: FailIndex", 1), "      restartPolicy: Never\n"), `spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`},
		{"backoffLimitPerIndex not Indexed", jobYAML("  completions: 3\n  backoffLimitPerIndex: 1\n", "      restartPolicy: Never\n"), "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"},
		{"maxFailedIndexes not Indexed", jobYAML("  completions: 3\n  backoffLimitPerIndex: 1\n  maxFailedIndexes: 1\n", "      restartPolicy: Never\n"), "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode"},
		{"negative backoffLimitPerIndex", jobYAML(indexed3+"  backoffLimitPerIndex: -1\n", "      restartPolicy: Never\n"), "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0"},
		{"negative maxFailedIndexes", jobYAML(indexed3+"  backoffLimitPerIndex: 1\n  maxFailedIndexes: -1\n", "      restartPolicy: Never\n"), "spec.maxFailedIndexes: Invalid value: -1: must be greater than or equal to 0"},
		{"maxFailedIndexes without backoffLimitPerIndex", jobYAML(indexed3+"  maxFailedIndexes: 1\n", "      restartPolicy: Never\n"), "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"},
		{"successPolicy not Indexed", jobYAML("  completions: 3\n  successPolicy:\n    rules: [{succeededCount: 1}]\n", "      restartPolicy: Never\n"), `spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode`},
		{"successPolicy without rules", jobYAML(indexed3+"  successPolicy: {rules: []}\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"},
		{"successPolicy rule without fields", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededCount: 1}, {}]\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules[1]: Required value: at least one of succeededCount or succeededIndexes must be specified"},
		{"successPolicy: 21 rules", jobYAML(indexed3+"  successPolicy:\n    rules: ["+strings.Repeat("{succeededCount: 1}, ", 20)+"{succeededCount: 1}]\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules: Too many: 21: must have at most 20 items"},
		{"succeededCount above completions", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededCount: 4}]\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of specified completions)"},
		{"negative succeededCount", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededCount: -1}]\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0"},
		{"succeededCount above its indexes", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"0,2\", succeededCount: 3}]\n", "      restartPolicy: Never\n"), "spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"},
		{"succeededIndexes beyond completions", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"1-3\"}]\n", "      restartPolicy: Never\n"), `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-3": error parsing succeededIndexes: too large index: "3"`},
		{"succeededIndexes past int32", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"0-99999999999\"}]\n", "      restartPolicy: Never\n"), `error parsing succeededIndexes: too large index: "99999999999"`},
		{"succeededIndexes out of order", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"2,0\"}]\n", "      restartPolicy: Never\n"), `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "2,0": error parsing succeededIndexes: non-increasing order, previous: 2, current: 0`},
		{"succeededIndexes not a number", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"0-x\"}]\n", "      restartPolicy: Never\n"), `error parsing succeededIndexes: cannot convert string to integer for index: "x"`},
		{"succeededIndexes three parts", jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"0-1-2\"}]\n", "      restartPolicy: Never\n"), `violates the requirement that an index interval can have at most two parts separated by '-'`},
		{"maxFailedIndexes above completions", jobYAML(indexed3+"  backoffLimitPerIndex: 1\n  maxFailedIndexes: 4\n", "      restartPolicy: Never\n"), "spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"},
		{"missing image", strings.Replace(jobYAML("", "      restartPolicy: Never\n"), "        image: busybox\n", "", 1), "spec.template.spec.containers[0].image: Required value"},
		{"no schedule", cronJobYAML(""), "CronJob default/hello: spec.schedule: Required value"},
		{"bad schedule", cronJobYAML("  schedule: \"61 * * * *\"\n"), "spec.schedule: Invalid value: \"61 * * * *\""},
		{"TZ in schedule", cronJobYAML("  schedule: \"TZ=UTC 0 * * * *\"\n"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{"unknown time zone", cronJobYAML("  schedule: \"0 * * * *\"\n  timeZone: Mars/Olympus\n"), "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"},
		{"Local time zone", cronJobYAML("  schedule: \"0 * * * *\"\n  timeZone: Local\n"), "spec.timeZone: Invalid value: \"Local\""},
		{"concurrencyPolicy", cronJobYAML("  schedule: \"0 * * * *\"\n  concurrencyPolicy: Sometimes\n"), "spec.concurrencyPolicy: Unsupported value: \"Sometimes\""},
		{"jobTemplate restartPolicy", strings.Replace(cronJobYAML("  schedule: \"0 * * * *\"\n"), "OnFailure", "Always", 1), "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value"},
		{"long CronJob name", strings.Replace(cronJobYAML("  schedule: \"0 * * * *\"\n"), "name: hello", "name: "+strings.Repeat("a", 53), 1), "metadata.name: Too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeString(t, tc.manifests, "job.yaml").Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n%v\ndoes not contain %q", err, tc.want)
			}
		})
	}
	for _, valid := range []string{
		jobYAML(failurePolicy, "      restartPolicy: Never\n"),
		cronJobYAML("  schedule: \"*/5 * * * *\"\n  timeZone: Europe/Paris\n"),
		jobYAML("  completionMode: Indexed\n  completions: 3\n  parallelism: 2\n", "      restartPolicy: Never\n"),
		jobYAML(indexed3+"  successPolicy:\n    rules: [{succeededIndexes: \"0,2\", succeededCount: 1}, {succeededCount: 3}]\n", "      restartPolicy: Never\n"),
		jobYAML(indexed3+"  backoffLimitPerIndex: 0\n  maxFailedIndexes: 3\n"+strings.Replace(failurePolicy, "action: FailJob", "action: FailIndex", 1), "      restartPolicy: Never\n"),
	} {
		if err := decodeString(t, valid, "ok.yaml").Validate(); err != nil {
			t.Errorf("valid manifest refused: %v", err)
		}
	}
}

func TestExampleJobAndCronJobValidate(t *testing.T) {
	for _, path := range []string{"../../../examples/job.yaml", "../../../examples/cronjob.yaml"} {
		b, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Validate(); err != nil || len(b.Jobs)+len(b.CronJobs) != 1 {
			t.Fatalf("%s: %d jobs, %d cronjobs, %v", path, len(b.Jobs), len(b.CronJobs), err)
		}
	}
}
