// Command berth is the berth container runtime: `berth serve` runs the CRI
// v1 daemon (and the node agent); `berth pull`, `berth images`, `berth rmi`
// and `berth image import|ls|prune` work on its image store, with or
// without the daemon; `berth run|apply|delete|get|describe|logs|events|
// exec|attach|debug|port-forward` drive the node agent, `berth cp` copies
// through a container's root, `berth top` reads the
// runtime's stats, and `berth agent` runs the agent alone against any CRI
// runtime.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..."; it is
// a semantic version, which kubelet parses for the node's status.
var version = "0.0.0-dev"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "berth:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var opts globalOptions
	root := &cobra.Command{
		Use:           "berth",
		Short:         "A container runtime (CRI v1) and pod agent for Linux",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	opts.bind(root)
	bindAgentFlags(root)
	root.AddCommand(newServeCommand(&opts), newImageCommand(&opts), newVersionCommand(&opts),
		newPullCommand(&opts), newImagesCommand(&opts, "images"), newRmiCommand(&opts))
	root.AddCommand(newRunCommand(&opts), newApplyCommand(&opts), newDeleteCommand(&opts),
		newGetCommand(&opts), newDescribeCommand(&opts), newLogsCommand(&opts), newEventsCommand(&opts),
		newExecCommand(&opts), newAttachCommand(&opts), newDebugCommand(&opts), newCpCommand(&opts),
		newPortForwardCommand(&opts), newTopCommand(&opts),
		newAgentCommand(&opts), newScaleCommand(&opts), newRolloutCommand(&opts), newCreateCommand(&opts))
	return root
}

func newVersionCommand(opts *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print berth's version and the runc it runs (by the config and flags, as berth serve resolves it)",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "berth %s (CRI v1)\n", version)
			fmt.Fprintln(out, runcLine(cmd.Context(), opts, cmd))
		},
	}
}
