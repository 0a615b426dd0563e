package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/crilog"
)

// logsOptions are the flags of `berth logs`.
type logsOptions struct {
	namespace  string
	container  string
	follow     bool
	previous   bool
	timestamps bool
}

func newLogsCommand(opts *globalOptions) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs POD",
		Short: "Print a container's log, like kubectl logs",
		Long: `Print the log of a pod's container, read from the CRI log files under the
pod's log directory (/var/log/pods/<namespace>_<name>_<uid>/<container>/<restart>.log):
the rotated files the agent kept (plain or gzipped, oldest first), then the current one.
-c picks the container (default: the only one, else the first); --previous reads the log
of its last terminated instance; -f follows the log, across rotations, until the
container exits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			detail, err := client.DescribePod(cmd.Context(), o.namespace, args[0])
			if err != nil {
				return err
			}
			path, err := containerLogPath(detail, &o)
			if err != nil {
				return err
			}
			return printLog(cmd.Context(), cmd.OutOrStdout(), client, detail, path, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first container)")
	f.BoolVarP(&o.follow, "follow", "f", false, "follow the log")
	f.BoolVarP(&o.previous, "previous", "p", false, "print the log of the container's previous instance")
	f.BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 timestamp")
	return cmd
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
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
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

func allContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

func containerNames(pod *v1.Pod) []string {
	var names []string
	for _, c := range allContainers(pod) {
		names = append(names, c.Name)
	}
	return names
}

// printLog copies the log's content, its rotated files first; with
// follow it keeps reading new records, across rotations, until the
// container instance is no longer running.
func printLog(ctx context.Context, w io.Writer, client *agentapi.Client, detail agentapi.PodDetail, path string, o logsOptions) error {
	l, err := openLogFollower(path, w, o.timestamps)
	if err != nil {
		return fmt.Errorf("log of container %q in pod %s: %w", o.container, detail.Pod.Name, err)
	}
	defer l.Close()
	if err := l.copyRotated(); err != nil {
		return fmt.Errorf("log of container %q in pod %s: %w", o.container, detail.Pod.Name, err)
	}
	if !o.follow || o.previous {
		return l.copyCurrent()
	}
	return l.followUntil(ctx, 250*time.Millisecond, func() bool { return stillRunning(ctx, client, detail, o.container) })
}

// copyRecords writes every complete record r holds now. A record still
// being written (no newline yet) is kept in pending for the next call.
func copyRecords(r *bufio.Reader, w io.Writer, timestamps bool, pending *[]byte) error {
	for {
		chunk, err := r.ReadBytes('\n')
		*pending = append(*pending, chunk...)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		recs, perr := crilog.ReadRecords(bytes.NewReader(*pending))
		*pending = (*pending)[:0]
		if perr != nil || len(recs) != 1 {
			continue // a damaged record: skipped, as kubelet does
		}
		rec := recs[0]
		if timestamps {
			fmt.Fprint(w, rec.Time.Format(time.RFC3339Nano)+" ")
		}
		_, _ = w.Write(rec.Content) // a closed stdout ends the command anyway
		if !rec.Partial {
			_, _ = io.WriteString(w, "\n") // as above
		}
	}
}

// stillRunning asks the agent whether the container whose log is followed
// still runs as the same instance.
func stillRunning(ctx context.Context, client *agentapi.Client, detail agentapi.PodDetail, name string) bool {
	before, _ := findContainerStatus(&detail.Pod, name)
	now, err := client.DescribePod(ctx, detail.Pod.Namespace, detail.Pod.Name)
	if err != nil || now.Pod.UID != detail.Pod.UID {
		return false
	}
	st, ok := findContainerStatus(&now.Pod, name)
	return ok && st.State.Running != nil && st.ContainerID == before.ContainerID
}
