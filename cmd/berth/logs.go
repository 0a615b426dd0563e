package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/errdefs"
)

// logsOptions are the flags of `berth logs`.
type logsOptions struct {
	namespace      string
	container      string
	selector       string
	follow         bool
	previous       bool
	timestamps     bool
	prefix         bool
	since          time.Duration
	sinceTime      string
	tail           int
	maxLogRequests int
	// log tells of a follow's moves across rotations (debug) and of
	// lines missing from it (warn).
	log *slog.Logger
}

func newLogsCommand(opts *globalOptions) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs (POD | -l SELECTOR)",
		Short: "Print a container's log, like kubectl logs",
		Long: `Print the log of a pod's container, read from the CRI log files under the
pod's log directory (/var/log/pods/<namespace>_<name>_<uid>/<container>/<restart>.log):
the rotated files the agent kept (plain or gzipped, oldest first), then the current one.
-c picks the container (default: the only one, else the first); --previous reads the log
of its last terminated instance; -f follows the log, across rotations, until the
container exits.
-l prints the logs of every pod its label selector matches (followed side by side with
-f, at most --max-log-requests of them); --tail then defaults to 10. --tail counts
records (across the rotated files too) and --since / --since-time drop older ones, as
kubelet does.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.selector != "" && len(args) > 0 {
				return errors.New("berth logs: a pod name or a selector (-l), not both")
			}
			if o.selector == "" && len(args) != 1 {
				return errors.New("berth logs: want one pod name, or -l SELECTOR")
			}
			return nil
		},
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter, err := newLogFilter(o.since, o.sinceTime, o.tail, o.selector != "", time.Now())
			if err != nil {
				return err
			}
			filter.timestamps = o.timestamps
			if o.log, err = followLogger(cmd, opts); err != nil {
				return err
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			if o.selector != "" {
				return printSelectedLogs(cmd, client, o, filter)
			}
			return printPodLog(cmd.Context(), cmd.OutOrStdout(), client, o.namespace, args[0], o, filter)
		},
	}
	bindLogsFlags(cmd, opts, &o)
	return cmd
}

func bindLogsFlags(cmd *cobra.Command, opts *globalOptions, o *logsOptions) {
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first container)")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector (e.g. app=web,tier!=db): the logs of every matching pod")
	f.BoolVarP(&o.follow, "follow", "f", false, "follow the log")
	f.BoolVarP(&o.previous, "previous", "p", false, "print the log of the container's previous instance")
	f.BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 timestamp")
	f.BoolVar(&o.prefix, "prefix", false, "prefix each line with its source, [pod/NAME/CONTAINER]")
	f.DurationVar(&o.since, "since", 0, "only records newer than this duration, e.g. 5s, 2m, 3h")
	f.StringVar(&o.sinceTime, "since-time", "", "only records after this RFC 3339 time")
	f.IntVar(&o.tail, "tail", -1, "the last N records only (-1: all; 10 with -l)")
	f.IntVar(&o.maxLogRequests, "max-log-requests", 5, "with -l and -f: the most logs followed at once")
	_ = cmd.RegisterFlagCompletionFunc("container", completeContainerNames(opts)) // the flag exists
}

// printPodLog prints the log of one pod's container.
func printPodLog(ctx context.Context, w io.Writer, client *agentapi.Client, namespace, name string, o logsOptions, filter logFilter) error {
	detail, err := client.DescribePod(ctx, namespace, name)
	if err != nil {
		return err
	}
	path, err := containerLogPath(detail, &o)
	if err != nil {
		return err
	}
	if o.prefix {
		filter.prefix = "[pod/" + name + "/" + o.container + "] "
	}
	return printLog(ctx, w, client, detail, path, o, filter)
}

// printSelectedLogs prints the logs of the pods o.selector matches: one
// after the other, or side by side when following.
func printSelectedLogs(cmd *cobra.Command, client *agentapi.Client, o logsOptions, filter logFilter) error {
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return fmt.Errorf("selector %q: %w", o.selector, err)
	}
	list, err := client.ListPods(cmd.Context(), o.namespace)
	if err != nil {
		return err
	}
	pods := matchingPods(list.Items, sel)
	if len(pods) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", o.namespace)
		return nil
	}
	if !o.follow {
		for _, name := range pods {
			if err := printPodLog(cmd.Context(), cmd.OutOrStdout(), client, o.namespace, name, o, filter); err != nil {
				return err
			}
		}
		return nil
	}
	if len(pods) > o.maxLogRequests {
		return fmt.Errorf("selector %q matches %d pods: following more than --max-log-requests=%d at once is refused", o.selector, len(pods), o.maxLogRequests)
	}
	w := &syncWriter{w: cmd.OutOrStdout()}
	errs := make(chan error, len(pods))
	for _, name := range pods {
		go func() { errs <- printPodLog(cmd.Context(), w, client, o.namespace, name, o, filter) }()
	}
	var all []error
	for range pods {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// matchingPods are the names of the pods whose labels sel matches, sorted,
// each once (a pod being replaced is listed beside its successor; the
// agent describes the current one).
func matchingPods(pods []v1.Pod, sel labels.Selector) []string {
	var names []string
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// containerLogPath finds the log file of the container o names, as
// kubelet picks the instance: the running or terminated one, else the last
// terminated one (a container waiting in CrashLoopBackOff); --previous
// picks the last terminated one.
func containerLogPath(detail agentapi.PodDetail, o *logsOptions) (string, error) {
	pod := &detail.Pod
	if o.container == "" {
		if len(pod.Spec.Containers) == 0 {
			return "", fmt.Errorf("pod %s has no containers", pod.Name)
		}
		o.container = pod.Spec.Containers[0].Name
	}
	st, ok := findContainerStatus(pod, o.container)
	if !ok {
		return "", fmt.Errorf("container %q is not valid for pod %s: want one of %s", o.container, pod.Name, strings.Join(containerNames(pod), ", "))
	}
	last := st.LastTerminationState.Terminated
	var id string
	switch {
	case o.previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %s not found", o.container, pod.Name)
		}
		id = last.ContainerID
	case st.State.Running != nil || (st.State.Terminated != nil && st.ContainerID != ""):
		id = st.ContainerID
	case last != nil && last.ContainerID != "":
		id = last.ContainerID
	case st.State.Waiting != nil:
		return "", fmt.Errorf("container %q in pod %s is waiting to start: %s", o.container, pod.Name, st.State.Waiting.Reason)
	}
	path := detail.LogPaths[trimContainerID(id)]
	if path == "" {
		return "", fmt.Errorf("container %q in pod %s: no log file known for instance %s", o.container, pod.Name, id)
	}
	return path, nil
}

// trimContainerID drops the "<runtime>://" prefix of a status container id.
func trimContainerID(id string) string {
	if _, rest, ok := strings.Cut(id, "://"); ok {
		return rest
	}
	return id
}

func findContainerStatus(pod *v1.Pod, name string) (v1.ContainerStatus, bool) {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}, true
		}
	}
	return v1.ContainerStatus{}, false
}

// allContainers lists the init, regular and ephemeral containers (these
// as their common fields) of a pod.
func allContainers(pod *v1.Pod) []v1.Container {
	out := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, ec := range pod.Spec.EphemeralContainers {
		out = append(out, v1.Container(ec.EphemeralContainerCommon))
	}
	return out
}

func containerNames(pod *v1.Pod) []string {
	var names []string
	for _, c := range allContainers(pod) {
		names = append(names, c.Name)
	}
	return names
}

// printLog copies the log's content, its rotated files first, through
// the filter; with follow it keeps reading new records, across rotations,
// until the container instance is no longer running.
func printLog(ctx context.Context, w io.Writer, client *agentapi.Client, detail agentapi.PodDetail, path string, o logsOptions, filter logFilter) error {
	c := newLogCopier(w, filter)
	l, err := openLogFollower(path, c)
	if err == nil && o.log != nil {
		l.log = o.log
	}
	if err != nil {
		return fmt.Errorf("log of container %q in pod %s: %w", o.container, detail.Pod.Name, err)
	}
	defer l.Close()
	if err := l.copyRotated(); err != nil {
		return fmt.Errorf("log of container %q in pod %s: %w", o.container, detail.Pod.Name, err)
	}
	if err := l.copyToEnd(); err != nil {
		return err
	}
	c.flush()
	if !o.follow || o.previous {
		return nil
	}
	check := &runningCheck{ctx: ctx, client: client, detail: detail, name: o.container}
	return l.followUntil(ctx, 250*time.Millisecond, check.running)
}

// runningCheck asks the agent whether the container whose log is
// followed still runs as the same instance. The pod gone means no; an
// error (a busy or restarting agent) is asked again at the next look, and
// ends the follow only when the agent has not answered for
// unansweredLimit.
type runningCheck struct {
	ctx        context.Context
	client     *agentapi.Client
	detail     agentapi.PodDetail
	name       string
	unanswered time.Time // since when the agent fails to answer; zero: it answers
}

const unansweredLimit = 30 * time.Second

func (r *runningCheck) running() (bool, error) {
	now, err := r.client.DescribePod(r.ctx, r.detail.Pod.Namespace, r.detail.Pod.Name)
	switch {
	case r.ctx.Err() != nil || errors.Is(err, errdefs.ErrNotFound):
		return false, nil
	case err != nil && r.unanswered.IsZero():
		r.unanswered = time.Now()
		return true, nil
	case err != nil && time.Since(r.unanswered) < unansweredLimit:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("follow the log of container %q in pod %s: %w", r.name, r.detail.Pod.Name, err)
	}
	r.unanswered = time.Time{}
	before, _ := findContainerStatus(&r.detail.Pod, r.name)
	st, ok := findContainerStatus(&now.Pod, r.name)
	return now.Pod.UID == r.detail.Pod.UID && ok && st.State.Running != nil && st.ContainerID == before.ContainerID, nil
}

// followLogger writes to stderr at the level of --log-level.
func followLogger(cmd *cobra.Command, opts *globalOptions) (*slog.Logger, error) {
	level, err := config.ParseLogLevel(opts.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})), nil
}
