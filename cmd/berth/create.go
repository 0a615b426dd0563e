package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// instantiateAnnotation marks a Job made by hand from a CronJob, as
// kubectl create job --from does.
const instantiateAnnotation = "cronjob.kubernetes.io/instantiate"

func newCreateCommand(opts *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "create", Short: "Create an object, like kubectl create (job --from=cronjob/NAME)"}
	var namespace, from string
	job := &cobra.Command{
		Use:   "job NAME --from=cronjob/CRONJOB",
		Short: "Run a CronJob's Job now, like kubectl create job --from=cronjob/NAME",
		Long: `Make a Job NAME from a CronJob's jobTemplate at once: its labels and annotations, the
annotation cronjob.kubernetes.io/instantiate=manual, and the CronJob as its controller (so the
CronJob lists it while it runs, and a Forbid policy waits for it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, cronJob, found := strings.Cut(from, "/")
			if resource, ok := batchResource(kind); !found || !ok || resource != agentapi.ResourceCronJob || cronJob == "" {
				return fmt.Errorf("--from=%q: want cronjob/NAME", from)
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			detail, err := client.DescribeWorkload(cmd.Context(), agentapi.ResourceCronJob, namespace, cronJob)
			if err != nil {
				return err
			}
			b := &manifest.Bundle{Jobs: []*manifest.Job{{Job: jobFromCronJob(detail.CronJob, args[0]), Source: "--from=" + from}}}
			if err := b.Validate(); err != nil {
				return err
			}
			resp, err := client.Apply(cmd.Context(), agentapi.ApplyRequest{Bundle: b})
			if err != nil {
				return err
			}
			for _, r := range resp.Objects {
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", objectLabel(r.Kind), r.Name, r.Outcome)
			}
			return nil
		},
	}
	job.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace")
	job.Flags().StringVar(&from, "from", "", "the CronJob to take the Job from: cronjob/NAME")
	_ = job.MarkFlagRequired("from") // the flag exists
	cmd.AddCommand(job)
	return cmd
}

// jobFromCronJob is the Job kubectl create job --from=cronjob makes.
func jobFromCronJob(cj *batchv1.CronJob, name string) *batchv1.Job {
	t := cj.Spec.JobTemplate
	annotations := map[string]string{instantiateAnnotation: "manual"}
	maps.Copy(annotations, t.Annotations)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace, Labels: maps.Clone(t.Labels), Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}
