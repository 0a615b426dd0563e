package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// attachOptions are the flags of `berth attach`.
type attachOptions struct {
	namespace string
	container string
	stdin     bool
	tty       bool
}

func newAttachCommand(opts *globalOptions) *cobra.Command {
	var o attachOptions
	cmd := &cobra.Command{
		Use:   "attach POD [-c CONTAINER] [-i] [-t]",
		Short: "Attach to the main process of a running container, like kubectl attach",
		Long: `Attach to the output (and, with -i, the input) of a running container's main
process: CRI Attach through the runtime endpoint, then the streaming protocol (SPDY), as
exec does. -i needs the container's stdin: true; -t needs its tty: true (without it berth
warns and attaches without a terminal). Ctrl-C ends the attach, not the container.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd, opts, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first container)")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "the container's stdin is a terminal (needs -i and a terminal on stdin)")
	_ = cmd.RegisterFlagCompletionFunc("container", completeContainerNames(opts)) // the flag exists
	return cmd
}

func runAttach(cmd *cobra.Command, opts *globalOptions, o attachOptions, podName string) error {
	target, err := dialContainer(cmd, opts, o.namespace, podName, o.container)
	if err != nil {
		return err
	}
	defer target.cri.Close()
	name := target.container.Name
	if o.stdin && !target.container.Stdin {
		return fmt.Errorf("attach -i to container %q in pod %s: its stdin is not open (set stdin: true in its spec)", name, podName)
	}
	tty, warning := attachTTY(o, target.container.TTY, term.IsTerminal(int(os.Stdin.Fd())))
	if warning != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "berth attach: %s\n", warning)
	}
	resp, err := target.cri.RuntimeService().Attach(cmd.Context(), &runtimeapi.AttachRequest{
		ContainerId: target.id, Stdin: o.stdin, Tty: tty, Stdout: true, Stderr: !tty,
	})
	if err != nil {
		return fmt.Errorf("attach to container %q in pod %s: %w", name, podName, err)
	}
	return streamSession(cmd.Context(), "attach", resp.GetUrl(), o.stdin, tty, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// attachTTY decides whether the attach uses a terminal: only when asked
// for (-t), when the container has one and when stdin is passed from a
// terminal; otherwise it says why not, as kubectl warns.
func attachTTY(o attachOptions, containerTTY, stdinIsTerminal bool) (bool, string) {
	switch {
	case !o.tty:
		return false, ""
	case !containerTTY:
		return false, "-t: the container did not allocate a terminal (tty: true); attaching without one"
	case !o.stdin || !stdinIsTerminal:
		return false, "-t needs -i and a terminal on stdin; attaching without a terminal"
	}
	return true, ""
}
