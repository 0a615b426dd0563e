package main

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// Shell completion of pod and container names (cobra's `berth completion
// bash|zsh|fish|powershell` scripts call `berth __complete ...`): the names
// come from the agent; when none answers there is nothing to offer.

// completionTimeout bounds the agent's answer: a shell waits for it.
const completionTimeout = 2 * time.Second

// completePodNames offers the names of the pods of the command's
// namespace (-n, every one with -A): after resource (as in `berth describe
// pod NAME`; resource itself first) when it is not empty, as at most
// maxNames arguments (0: any number), each pod once.
func completePodNames(opts *globalOptions, resource string, maxNames int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if resource != "" {
			if len(args) == 0 {
				return withPrefix([]string{resource}, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			args = args[1:]
		}
		if maxNames > 0 && len(args) >= maxNames {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		client, ctx, cancel, ok := completionClient(cmd, opts)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cancel()
		list, err := client.ListPods(ctx, completionNamespace(cmd))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, p := range list.Items {
			if !slices.Contains(args, p.Name) {
				names = append(names, p.Name)
			}
		}
		sort.Strings(names)
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeContainerNames offers the container names (init containers
// too) of the pod named by the first argument, for -c.
func completeContainerNames(opts *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		client, ctx, cancel, ok := completionClient(cmd, opts)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cancel()
		detail, err := client.DescribePod(ctx, completionNamespace(cmd), args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(containerNames(&detail.Pod), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func completionClient(cmd *cobra.Command, opts *globalOptions) (*agentapi.Client, context.Context, context.CancelFunc, bool) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	return agentapi.NewClient(agentSocket(cfg)), ctx, cancel, true
}

// completionNamespace is the namespace the command line names so far:
// -n's value, or every namespace with -A.
func completionNamespace(cmd *cobra.Command) string {
	if all, err := cmd.Flags().GetBool("all-namespaces"); err == nil && all {
		return ""
	}
	if ns, err := cmd.Flags().GetString("namespace"); err == nil {
		return ns
	}
	return "default"
}

// withPrefix keeps the names starting with prefix, in order, each once.
func withPrefix(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
