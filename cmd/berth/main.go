// Command berth is the berth container runtime: `berth serve` runs the CRI
// v1 daemon; `berth pull`, `berth images`, `berth rmi` and `berth image
// import|ls|prune` work on its image store, with or without the daemon.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	root.AddCommand(newServeCommand(&opts), newImageCommand(&opts), newVersionCommand(),
		newPullCommand(&opts), newImagesCommand(&opts, "images"), newRmiCommand(&opts))
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print berth's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "berth %s (CRI v1)\n", version)
		},
	}
}
