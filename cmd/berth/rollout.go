package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
)

func newScaleCommand(opts *globalOptions) *cobra.Command {
	var namespace string
	var replicas int32
	cmd := &cobra.Command{
		Use:   "scale (deployment/NAME | replicaset/NAME | statefulset/NAME) --replicas=N",
		Short: "Set a Deployment's, ReplicaSet's or StatefulSet's replicas, like kubectl scale",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("replicas") || replicas < 0 {
				return errors.New("--replicas=N (N >= 0) is required")
			}
			resource, name, err := splitTypeName(args[0])
			if err != nil {
				return err
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			r, err := client.Scale(cmd.Context(), resource, namespace, name, replicas)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", kindLabel(r.Kind), r.Name, r.Outcome)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace")
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "the new number of replicas")
	return cmd
}

func newRolloutCommand(opts *globalOptions) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:   "rollout (status|restart|undo|history) (deployment|statefulset)/NAME | rollout (status|restart) daemonset/NAME | rollout (pause|resume) deployment/NAME",
		Short: "Follow, restart, roll back, pause, resume or list the revisions of a Deployment's, StatefulSet's or DaemonSet's rollout, like kubectl rollout",
	}
	cmd.PersistentFlags().StringVarP(&namespace, "namespace", "n", "default", "namespace")
	// history: the sub-command needs revisions, which berth keeps for
	// Deployments and StatefulSets, not for DaemonSets.
	sub := func(use, short string, history bool, run func(cmd *cobra.Command, client *agentapi.Client, res rolloutTarget) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " (deployment|statefulset|daemonset)/NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				resource, name, err := splitTypeName(args[0])
				if err != nil {
					return err
				}
				switch {
				case resource == agentapi.ResourceDaemonSet && history:
					return fmt.Errorf("%s: berth keeps no revision history of DaemonSets: only rollout status and restart", args[0])
				case resource != agentapi.ResourceDeployment && resource != agentapi.ResourceStatefulSet && resource != agentapi.ResourceDaemonSet:
					return fmt.Errorf("%s: only Deployments, StatefulSets and DaemonSets roll out", args[0])
				}
				client, err := connectAgent(cmd, opts)
				if err != nil {
					return err
				}
				return run(cmd, client, rolloutTarget{resource: resource, namespace: namespace, name: name})
			},
		}
	}
	var toRevision int64
	undo := sub("undo", "Roll back to the previous revision (or --to-revision)", true, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
		return rolloutAction(cmd, c, t, agentapi.RolloutRequest{Undo: true, ToRevision: toRevision})
	})
	undo.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to (0: the previous one)")
	cmd.AddCommand(
		sub("status", "Follow the rollout until it completes", false, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
			return rolloutStatusOf(cmd.Context(), c, t, cmd.OutOrStdout())
		}),
		sub("restart", "Restart every pod through a rollout (kubectl.kubernetes.io/restartedAt)", false, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
			return rolloutAction(cmd, c, t, agentapi.RolloutRequest{Restart: true})
		}),
		undo,
		sub("history", "List the revisions", true, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
			return rolloutHistoryOf(cmd.Context(), c, t, cmd.OutOrStdout())
		}),
		// pause and resume: the agent answers kubectl's errors for a
		// Deployment already paused (not paused) and for other kinds.
		sub("pause", "Pause a Deployment: template changes wait, scaling still applies (spec.paused)", false, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
			return rolloutAction(cmd, c, t, agentapi.RolloutRequest{Pause: true})
		}),
		sub("resume", "Resume a paused Deployment: its rollout continues", false, func(cmd *cobra.Command, c *agentapi.Client, t rolloutTarget) error {
			return rolloutAction(cmd, c, t, agentapi.RolloutRequest{Resume: true})
		}),
	)
	return cmd
}

func rolloutAction(cmd *cobra.Command, client *agentapi.Client, t rolloutTarget, req agentapi.RolloutRequest) error {
	r, err := client.Rollout(cmd.Context(), t.resource, t.namespace, t.name, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", kindLabel(r.Kind), r.Name, r.Outcome)
	return nil
}

// rolloutStatus prints kubectl rollout status's lines until the rollout
// completes, or fails when it exceeded its progress deadline.
func rolloutStatus(ctx context.Context, client *agentapi.Client, resource, namespace, name string, out io.Writer) error {
	last := ""
	for {
		detail, err := client.DescribeWorkload(ctx, resource, namespace, name)
		if err != nil {
			return err
		}
		var msg string
		var done bool
		switch {
		case detail.DaemonSet != nil:
			msg, done, err = daemonSetRolloutMessage(detail.DaemonSet)
		case detail.StatefulSet != nil:
			msg, done, err = statefulSetRolloutMessage(detail.StatefulSet)
		default:
			msg, done, err = rolloutMessage(detail.Deployment)
		}
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprint(out, msg)
			last = msg
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// rolloutMessage is kubectl's status line for a Deployment, and whether
// its rollout is complete.
func rolloutMessage(d *appsv1.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...\n", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == workload.ReasonDeadlineExceeded {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	s, replicas := d.Status, workload.Replicas(d.Spec.Replicas)
	switch {
	case s.UpdatedReplicas < replicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...\n", d.Name, s.UpdatedReplicas, replicas), false, nil
	case s.Replicas > s.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...\n", d.Name, s.Replicas-s.UpdatedReplicas), false, nil
	case s.AvailableReplicas < s.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...\n", d.Name, s.AvailableReplicas, s.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out\n", d.Name), true, nil
}

// rolloutHistory lists the revisions of a Deployment's ReplicaSets.
func rolloutHistory(ctx context.Context, client *agentapi.Client, namespace, name string, out io.Writer) error {
	detail, err := client.DescribeWorkload(ctx, agentapi.ResourceDeployment, namespace, name)
	if err != nil {
		return err
	}
	sets := detail.ReplicaSets
	sort.Slice(sets, func(i, j int) bool { return workload.Revision(&sets[i]) < workload.Revision(&sets[j]) })
	fmt.Fprintf(out, "deployment.apps/%s\n", name)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for i := range sets {
		cause := sets[i].Annotations["kubernetes.io/change-cause"]
		fmt.Fprintf(tw, "%s\t%s\n", strconv.FormatInt(workload.Revision(&sets[i]), 10), orNone(cause))
	}
	return tw.Flush()
}
