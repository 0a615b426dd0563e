package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

// execOptions are the flags of `berth exec`.
type execOptions struct {
	namespace string
	container string
	stdin     bool
	tty       bool
}

func newExecCommand(opts *globalOptions) *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec [-it] POD [-c CONTAINER] -- COMMAND [ARG...]",
		Short: "Run a command in a pod's container, like kubectl exec",
		Long: `Run a command in a running container of a pod: CRI Exec through the runtime
endpoint, then the streaming protocol (SPDY), as crictl exec does. The exit code of the
command becomes berth's.`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: berth exec [-it] POD [-c CONTAINER] -- COMMAND [ARG...]")
			}
			return runExec(cmd, opts, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first container)")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the command")
	f.BoolVarP(&o.tty, "tty", "t", false, "allocate a terminal (needs -i and a terminal on stdin)")
	_ = cmd.RegisterFlagCompletionFunc("container", completeContainerNames(opts)) // the flag exists
	return cmd
}

func runExec(cmd *cobra.Command, opts *globalOptions, o execOptions, podName string, command []string) error {
	target, err := dialContainer(cmd, opts, o.namespace, podName, o.container)
	if err != nil {
		return err
	}
	defer target.cri.Close()
	tty := o.tty && o.stdin && term.IsTerminal(int(os.Stdin.Fd()))
	if o.tty && !tty {
		fmt.Fprintln(cmd.ErrOrStderr(), "berth exec: -t needs -i and a terminal on stdin; running without a terminal")
	}
	resp, err := target.cri.RuntimeService().Exec(cmd.Context(), &runtimeapi.ExecRequest{
		ContainerId: target.id, Cmd: command, Tty: tty, Stdin: o.stdin, Stdout: true, Stderr: !tty,
	})
	if err != nil {
		return fmt.Errorf("exec in pod %s: %w", podName, err)
	}
	err = streamSession(cmd.Context(), "exec", resp.GetUrl(), o.stdin, tty, cmd.OutOrStdout(), cmd.ErrOrStderr())
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		os.Exit(exitErr.ExitStatus())
	}
	return err
}

// streamTarget is a running container of a pod and the CRI client that
// reaches its runtime.
type streamTarget struct {
	cri       *criclient.CRIClient
	id        string       // the runtime's container id
	container v1.Container // its spec
}

// dialContainer finds the named (or first) running container of a pod
// through the agent and dials the runtime endpoint.
func dialContainer(cmd *cobra.Command, opts *globalOptions, namespace, podName, container string) (streamTarget, error) {
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return streamTarget{}, err
	}
	detail, err := client.DescribePod(cmd.Context(), namespace, podName)
	if err != nil {
		return streamTarget{}, err
	}
	id, err := runningContainerID(&detail.Pod, container)
	if err != nil {
		return streamTarget{}, err
	}
	cfg, err := opts.load(cmd)
	if err != nil {
		return streamTarget{}, err
	}
	cri, err := criclient.Dial(runtimeEndpoint(cfg))
	if err != nil {
		return streamTarget{}, err
	}
	t := streamTarget{cri: cri, id: id}
	for _, c := range allContainers(&detail.Pod) {
		if c.Name == container || (container == "" && c.Name == detail.Pod.Spec.Containers[0].Name) {
			t.container = c
		}
	}
	return t, nil
}

// runningContainerID is the runtime's id of the named (or first) container
// when it runs.
func runningContainerID(pod *v1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 0 {
			return "", fmt.Errorf("pod %s has no containers", pod.Name)
		}
		name = pod.Spec.Containers[0].Name
	}
	st, ok := findContainerStatus(pod, name)
	if !ok {
		return "", fmt.Errorf("container %q is not valid for pod %s", name, pod.Name)
	}
	if st.State.Running == nil || st.ContainerID == "" {
		return "", fmt.Errorf("container %q in pod %s is not running", name, pod.Name)
	}
	return trimContainerID(st.ContainerID), nil
}

// streamSession runs the remote command session (exec or attach) at
// rawURL with this process's stdio; with tty the terminal is raw for the
// session and resizes follow SIGWINCH.
func streamSession(ctx context.Context, what, rawURL string, stdin, tty bool, stdout, stderr io.Writer) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%s: streaming URL %q: %w", what, rawURL, err)
	}
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	opts := remotecommand.StreamOptions{Stdout: stdout, Tty: tty}
	if stdin {
		opts.Stdin = os.Stdin
	}
	if !tty {
		opts.Stderr = stderr
		return exe.StreamWithContext(ctx, opts)
	}
	fd := int(os.Stdin.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("%s: terminal: %w", what, err)
	}
	defer term.Restore(fd, old) //nolint:errcheck // best effort on the way out
	sizes := newTerminalSizes(fd)
	defer sizes.stop()
	opts.TerminalSizeQueue = sizes
	return exe.StreamWithContext(ctx, opts)
}

// terminalSizes reports the terminal's size at start and after each
// SIGWINCH.
type terminalSizes struct {
	fd      int
	signals chan os.Signal
	sizes   chan remotecommand.TerminalSize
	done    chan struct{}
}

func newTerminalSizes(fd int) *terminalSizes {
	s := &terminalSizes{fd: fd, signals: make(chan os.Signal, 1), sizes: make(chan remotecommand.TerminalSize, 1), done: make(chan struct{})}
	signal.Notify(s.signals, syscall.SIGWINCH)
	s.signals <- syscall.SIGWINCH // the first size
	go func() {
		for {
			select {
			case <-s.done:
				return
			case <-s.signals:
				if w, h, err := term.GetSize(fd); err == nil {
					select {
					case s.sizes <- remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}:
					case <-s.done:
						return
					}
				}
			}
		}
	}()
	return s
}

// Next blocks until the next size, or returns nil once stopped.
func (s *terminalSizes) Next() *remotecommand.TerminalSize {
	select {
	case size := <-s.sizes:
		return &size
	case <-s.done:
		return nil
	}
}

func (s *terminalSizes) stop() {
	signal.Stop(s.signals)
	close(s.done)
}
