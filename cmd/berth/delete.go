package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/errdefs"
)

// deleteOptions are the flags of `berth delete`.
type deleteOptions struct {
	namespace string
	files     []string
	grace     int64
	wait      bool
}

func newDeleteCommand(opts *globalOptions) *cobra.Command {
	var o deleteOptions
	cmd := &cobra.Command{
		Use:   "delete (pod|deployment|replicaset|statefulset|daemonset|job|cronjob|pvc|service NAME... | -f FILE|DIR|-)",
		Short: "Delete pods, workloads, claims or Services: preStop hooks, then stop within the grace period, then remove",
		Long: `Delete pods, Deployments (deploy), ReplicaSets (rs), StatefulSets (sts), DaemonSets (ds), Jobs,
CronJobs (cj), PersistentVolumeClaims (pvc) or Services (svc) by name, or the objects of manifests
(-f). -f DIR stops the agent's watch of the directory and deletes its pods. A workload goes at
once and what it owns after it (kubectl's background cascade): a Deployment's ReplicaSets and
pods, a ReplicaSet's, StatefulSet's, DaemonSet's or Job's pods, a CronJob's Jobs and their pods. Each pod's preStop hooks run and its containers stop within
terminationGracePeriodSeconds (--grace-period overrides it); then the sandbox, volumes and
logs are removed. berth waits until the pods are gone unless --wait=false.`,
		ValidArgsFunction: completePodNames(opts, "pod", 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			var grace *int64
			if cmd.Flags().Changed("grace-period") {
				grace = &o.grace
			}
			targets, err := deleteTargets(cmd.Context(), client, o, args, grace, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return finishDelete(cmd.Context(), client, targets, o.wait, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringSliceVarP(&o.files, "filename", "f", nil, "manifest file, directory, or - for stdin")
	f.Int64Var(&o.grace, "grace-period", 0, "seconds the pods get to stop (default: their terminationGracePeriodSeconds)")
	f.BoolVar(&o.wait, "wait", true, "wait until the pods are gone")
	return cmd
}

// deleteTarget is one object a delete started to remove, and its pods
// (for a pod: itself) to wait for.
type deleteTarget struct {
	label string // `pod "web"`, `deployment.apps "web"`
	pods  []agentapi.ApplyResult
	// outcome is OutcomeSkipped for an object berth never applies
	// (reason says why), else empty: deleted.
	outcome, reason string
}

// deleteTargets starts the deletions and returns what is being deleted.
func deleteTargets(ctx context.Context, client *agentapi.Client, o deleteOptions, args []string, grace *int64, stdin io.Reader) ([]deleteTarget, error) {
	resource, isWorkload := "", false
	if len(args) > 0 {
		resource, isWorkload = workloadResource(args[0])
	}
	switch {
	case len(o.files) > 0 && len(args) > 0:
		return nil, errors.New("give either names or -f, not both")
	case len(o.files) > 0:
		return deleteManifests(ctx, client, o.files, grace, stdin)
	case len(args) < 2 || (!isPodsResource(args[0]) && !isWorkload):
		return nil, errors.New("usage: berth delete (pod|deployment|replicaset|statefulset|daemonset|job|cronjob|pvc|service) NAME... [-n NAMESPACE], or berth delete -f FILE|DIR")
	}
	var targets []deleteTarget
	for _, name := range args[1:] {
		t, err := deleteOne(ctx, client, resource, o.namespace, name, grace)
		if err != nil {
			return targets, err
		}
		targets = append(targets, t...)
	}
	return targets, nil
}

// deleteOne deletes a pod (resource "") or a workload object.
func deleteOne(ctx context.Context, client *agentapi.Client, resource, namespace, name string, grace *int64) ([]deleteTarget, error) {
	if resource == "" {
		resp, err := client.Delete(ctx, namespace, name, grace)
		return podTargets(resp.Pods), err
	}
	resp, err := client.DeleteWorkload(ctx, resource, namespace, name, grace)
	if err != nil {
		return nil, err
	}
	var out []deleteTarget
	for _, d := range resp.Deleted {
		out = append(out, deleteTarget{label: fmt.Sprintf("%s %q", kindLabel(d.Kind), d.Name), pods: resp.Pods})
	}
	return out, nil
}

func podTargets(pods []agentapi.ApplyResult) []deleteTarget {
	out := make([]deleteTarget, len(pods))
	for i, p := range pods {
		out[i] = deleteTarget{label: fmt.Sprintf("pod %q", p.Name), pods: []agentapi.ApplyResult{p}}
	}
	return out
}

// deleteManifests deletes the objects of files, and stops the watch of
// directories (which deletes their pods). Objects of kinds berth skips
// were never applied: they are skipped again, and said so.
func deleteManifests(ctx context.Context, client *agentapi.Client, paths []string, grace *int64, stdin io.Reader) ([]deleteTarget, error) {
	var targets []deleteTarget
	for _, path := range paths {
		pods, watched, err := unwatchDir(ctx, client, path)
		if err != nil {
			return targets, err
		}
		if watched {
			targets = append(targets, pods...)
			if b, err := manifest.Load(path, stdin); err == nil {
				targets = append(targets, skippedTargets(b)...)
			}
			continue
		}
		b, err := manifest.Load(path, stdin)
		if err != nil {
			return targets, fmt.Errorf("%s: %w", path, err)
		}
		for _, p := range b.Pods {
			t, err := deleteOne(ctx, client, "", p.Namespace, p.Name, grace)
			if err != nil {
				return targets, err
			}
			targets = append(targets, t...)
		}
		for _, w := range b.Workloads() {
			resource, _ := workloadResource(w.Kind)
			t, err := deleteOne(ctx, client, resource, w.Meta.Namespace, w.Meta.Name, grace)
			if err != nil {
				return targets, err
			}
			targets = append(targets, t...)
		}
		targets = append(targets, skippedTargets(b)...)
	}
	return targets, nil
}

// unwatchDir stops the agent's watch of path when it is a watched
// directory, and returns what is being deleted: the workloads, Services
// and claims that came from it, then the pods (its own and the
// workloads'); watched is false for a file, or a directory the agent does
// not watch (its files' objects are deleted one by one).
func unwatchDir(ctx context.Context, client *agentapi.Client, path string) (targets []deleteTarget, watched bool, err error) {
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		return nil, false, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false, err
	}
	resp, err := client.Unwatch(ctx, abs)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	for _, d := range resp.Deleted {
		targets = append(targets, deleteTarget{label: fmt.Sprintf("%s %q", kindLabel(d.Kind), d.Name)})
	}
	return append(targets, podTargets(resp.Pods)...), true, nil
}

// skippedTargets are the objects of kinds berth does not apply: nothing
// to delete, each said so with its reason.
func skippedTargets(b *manifest.Bundle) []deleteTarget {
	out := make([]deleteTarget, 0, len(b.Skipped))
	for _, s := range b.Skipped {
		out = append(out, deleteTarget{label: fmt.Sprintf("%s %q", s.Resource(), s.Name), outcome: agentapi.OutcomeSkipped, reason: s.Reason()})
	}
	return out
}

// finishDelete waits (when asked) until the pods of every object being
// deleted are gone, and says so; a skipped object gets a Warning line on
// errOut, as apply prints one.
func finishDelete(ctx context.Context, client *agentapi.Client, targets []deleteTarget, wait bool, out, errOut io.Writer) error {
	for _, t := range targets {
		if wait {
			for _, p := range t.pods {
				if err := waitGone(ctx, client, p); err != nil {
					return err
				}
			}
		}
		if t.outcome == agentapi.OutcomeSkipped {
			fmt.Fprintf(out, "%s skipped\n", t.label)
			fmt.Fprintf(errOut, "Warning: %s skipped: %s\n", t.label, t.reason)
			continue
		}
		fmt.Fprintf(out, "%s deleted\n", t.label)
	}
	return nil
}

// waitGone polls the agent until the pod of that uid no longer exists.
func waitGone(ctx context.Context, client *agentapi.Client, t agentapi.ApplyResult) error {
	for {
		list, err := client.ListPods(ctx, t.Namespace)
		if err != nil {
			return err
		}
		present := false
		for _, p := range list.Items {
			present = present || string(p.UID) == t.UID
		}
		if !present {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
