package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/errdefs"
)

// debugOptions are the flags of `berth debug`.
type debugOptions struct {
	namespace     string
	image         string
	container     string
	target        string
	pullPolicy    string
	env           map[string]string
	profile       string
	stdin         bool
	tty           bool
	quiet         bool
	argsOnly      bool
	attach        bool
	attachChanged bool
	timeout       time.Duration
	args          []string // after --
}

func newDebugCommand(opts *globalOptions) *cobra.Command {
	return debugCommand(opts, func(cmd *cobra.Command, o debugOptions, pod string) error {
		return runDebug(cmd, opts, o, pod)
	})
}

// debugCommand is `berth debug`, whose checked options go to run.
func debugCommand(opts *globalOptions, run func(cmd *cobra.Command, o debugOptions, pod string) error) *cobra.Command {
	var o debugOptions
	cmd := &cobra.Command{
		Use:   "debug POD --image=IMAGE [-it] [--target=CONTAINER] [-c NAME] [-- COMMAND [ARG...]]",
		Short: "Add an ephemeral debug container to a running pod, like kubectl debug",
		Long: `Add an ephemeral container to a running pod (kubectl debug's ephemeral-container
mode): it runs IMAGE beside the pod's containers, in the pod's network, and is never
restarted. --target joins the process namespace of one of the pod's containers, so that
its processes are seen (ps) even when its image has no shell. -i keeps its stdin open and
attaches to it once it runs (-t with a terminal); without -i berth returns once it is
added. The name defaults to debugger-<5 random characters>. Ephemeral containers cannot
be changed or removed: they go with the pod.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return run(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringVar(&o.image, "image", "", "the debug container's image (required)")
	f.StringVarP(&o.container, "container", "c", "", "the debug container's name (default: debugger-<5 random characters>)")
	f.StringVar(&o.target, "target", "", "join the process namespace of this container of the pod")
	f.StringVar(&o.pullPolicy, "image-pull-policy", "", "Always, IfNotPresent or Never (default: by the image's tag, as for any container)")
	f.StringToStringVar(&o.env, "env", nil, "environment variables of the debug container, KEY=VALUE[,KEY=VALUE]")
	f.StringVar(&o.profile, "profile", profileLegacy, "security profile: legacy, general, baseline, netadmin, restricted or sysadmin")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "keep the container's stdin open and attach to it")
	f.BoolVarP(&o.tty, "tty", "t", false, "allocate a terminal for the container (needs -i)")
	f.BoolVar(&o.attach, "attach", false, "attach once the container runs (default: with -i)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print no informational messages")
	f.BoolVar(&o.argsOnly, "arguments-only", false, "what follows -- are the container's args, not its command")
	f.DurationVar(&o.timeout, "pod-running-timeout", time.Minute, "how long to wait for the container to run before attaching")
	_ = cmd.RegisterFlagCompletionFunc("target", completeContainerNames(opts)) // the flag exists
	return cmd
}

// complete checks the arguments and flags as kubectl debug does.
func (o *debugOptions) complete(cmd *cobra.Command, args []string) error {
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		if dash != 1 {
			return errors.New("usage: berth debug POD --image=IMAGE [-it] [-- COMMAND [ARG...]]: one pod before --")
		}
		o.args = args[1:]
	} else if len(args) != 1 {
		return errors.New("usage: berth debug POD --image=IMAGE [-it] [-- COMMAND [ARG...]]: the command goes after --")
	}
	o.attachChanged = cmd.Flags().Changed("attach")
	return o.validate()
}

// validate refuses what kubectl debug refuses in the ephemeral mode.
func (o *debugOptions) validate() error {
	switch {
	case o.image == "":
		return errors.New("you must specify --image")
	case o.tty && !o.stdin:
		return errors.New("-i/--stdin is required for containers with -t/--tty=true")
	}
	switch v1.PullPolicy(o.pullPolicy) {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever, "":
	default:
		return fmt.Errorf("invalid image pull policy: %s", o.pullPolicy)
	}
	if _, ok := debugProfiles[o.profile]; !ok {
		return fmt.Errorf("unknown profile %q: want legacy, general, baseline, netadmin, restricted or sysadmin", o.profile)
	}
	if !o.attachChanged {
		o.attach = o.stdin
	}
	return nil
}

// ephemeralContainer is the container kubectl debug adds, with the
// profile applied.
func (o debugOptions) ephemeralContainer(name string) v1.EphemeralContainer {
	ec := v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: name, Image: o.image, ImagePullPolicy: v1.PullPolicy(o.pullPolicy),
			Stdin: o.stdin, TTY: o.tty, TerminationMessagePolicy: v1.TerminationMessageReadFile,
		},
		TargetContainerName: o.target,
	}
	for _, k := range sortedMapKeys(o.env) {
		ec.Env = append(ec.Env, v1.EnvVar{Name: k, Value: o.env[k]})
	}
	if o.argsOnly {
		ec.Args = o.args
	} else {
		ec.Command = o.args
	}
	debugProfiles[o.profile]((*v1.Container)(&ec.EphemeralContainerCommon))
	return ec
}

// debugContainerName is -c, else debugger-<5 random characters> not taken
// by any container of the pod.
func debugContainerName(pod *v1.Pod, given string, suffix func(int) string) string {
	if given != "" {
		return given
	}
	taken := map[string]bool{}
	for _, c := range allContainers(pod) {
		taken[c.Name] = true
	}
	for {
		if name := "debugger-" + suffix(5); !taken[name] {
			return name
		}
	}
}

func runDebug(cmd *cobra.Command, opts *globalOptions, o debugOptions, podName string) error {
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.profile == profileLegacy && !o.quiet {
		fmt.Fprintln(errOut, `--profile=legacy is deprecated and will be removed in the future. It is recommended to explicitly specify a profile, for example "--profile=general".`)
	}
	if o.target != "" && !o.quiet {
		fmt.Fprintf(out, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", o.target)
	}
	name, err := addDebugContainer(cmd.Context(), client, o, podName, out)
	if err != nil {
		return err
	}
	if !o.attach {
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	st, err := waitContainerStarted(ctx, client, o.namespace, podName, name, errOut)
	cancel()
	if err != nil {
		return err
	}
	if st.State.Terminated != nil {
		return printPodLog(cmd.Context(), out, client, o.namespace, podName, logsOptions{container: name}, logFilter{tail: -1})
	}
	tty := o.tty && term.IsTerminal(int(os.Stdin.Fd()))
	if !o.quiet && o.stdin {
		fmt.Fprintln(errOut, "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.")
		fmt.Fprintln(errOut, "If you don't see a command prompt, try pressing enter.")
	}
	err = runAttach(cmd, opts, attachOptions{namespace: o.namespace, container: name, stdin: o.stdin, tty: o.tty}, podName)
	if err == nil && !o.quiet && o.stdin && tty {
		fmt.Fprintf(out, "Session ended, the ephemeral container will not be restarted but may be reattached using 'berth attach %s -c %s -i -t' if it is still running\n", podName, name)
	}
	return err
}

// addDebugContainer adds the debug container to the pod's ephemeral
// containers and returns its name. A concurrent addition (the agent then
// refuses the list as removing one) is retried with the pod read again.
func addDebugContainer(ctx context.Context, client *agentapi.Client, o debugOptions, podName string, out io.Writer) (string, error) {
	for attempt := 0; ; attempt++ {
		detail, err := client.DescribePod(ctx, o.namespace, podName)
		if err != nil {
			return "", err
		}
		pod := &detail.Pod
		name := debugContainerName(pod, o.container, utilrand.String)
		if o.container == "" && !o.quiet && attempt == 0 {
			fmt.Fprintf(out, "Defaulting debug container name to %s.\n", name)
		}
		list := append(append([]v1.EphemeralContainer{}, pod.Spec.EphemeralContainers...), o.ephemeralContainer(name))
		_, err = client.UpdateEphemeralContainers(ctx, o.namespace, podName, list)
		if err == nil {
			return name, nil
		}
		if attempt > 0 || !errors.Is(err, errdefs.ErrInvalidArgument) || !stillThere(ctx, client, o.namespace, podName, pod) {
			return "", fmt.Errorf("add debug container %q to pod %s/%s: %w", name, o.namespace, podName, err)
		}
	}
}

// stillThere reports whether the pod gained ephemeral containers since it
// was read (another debug raced this one): then the addition is retried.
func stillThere(ctx context.Context, client *agentapi.Client, namespace, name string, read *v1.Pod) bool {
	now, err := client.DescribePod(ctx, namespace, name)
	return err == nil && now.Pod.UID == read.UID && len(now.Pod.Spec.EphemeralContainers) > len(read.Spec.EphemeralContainers)
}

// waitContainerStarted waits until the ephemeral container runs or has
// terminated, printing the reason it waits for when that changes
// (ErrImagePull, ...), as kubectl debug warns.
func waitContainerStarted(ctx context.Context, client *agentapi.Client, namespace, podName, name string, errOut io.Writer) (v1.ContainerStatus, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastMessage := ""
	for {
		detail, err := client.DescribePod(ctx, namespace, podName)
		if err != nil {
			return v1.ContainerStatus{}, err
		}
		for _, st := range detail.Pod.Status.EphemeralContainerStatuses {
			if st.Name != name {
				continue
			}
			if st.State.Running != nil || st.State.Terminated != nil {
				return st, nil
			}
			if w := st.State.Waiting; w != nil && w.Message != "" && w.Message != lastMessage {
				fmt.Fprintf(errOut, "Warning: container %s: %s\n", name, w.Message)
				lastMessage = w.Message
			}
		}
		select {
		case <-ctx.Done():
			return v1.ContainerStatus{}, fmt.Errorf("debug container %q in pod %s/%s did not start: %w", name, namespace, podName, ctx.Err())
		case <-tick.C:
		}
	}
}
