package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// runOptions are the flags of `berth run` and `berth apply`.
type runOptions struct {
	files  []string
	detach bool
	quiet  bool // no pull progress
}

func newRunCommand(opts *globalOptions) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run -f FILE|DIR|-",
		Short: "Run the pods of Kubernetes manifests and follow their status",
		Long: `Run Pod manifests (with the ConfigMaps and Secrets they use) on this machine, with
kubelet's semantics. The manifests are validated first. -f DIR makes the agent watch the
directory: adding, changing or removing a file adds, updates or removes its objects (a pod
is replaced, a Deployment rolls out; 'berth delete -f DIR' stops the watch and deletes
everything that came from it). Objects of
cluster kinds berth does not apply on one node (Namespace, ServiceAccount, RBAC, Ingress,
NetworkPolicy, HorizontalPodAutoscaler, PodDisruptionBudget, PriorityClass...) are checked,
printed as skipped and warned about on stderr with the reason; other kinds are refused.

In the foreground, berth run prints a status line for every change until the pods run
(and are ready) or have failed, and keeps following until Ctrl-C, which detaches: the pods
keep running. -d returns at once. While the agent pulls a pod's image, berth run shows the
pull on stderr (bars on a terminal, plain lines otherwise; -q hides it): layers, bytes and
rate on berth's own runtime, only its start and end on another CRI runtime, which tells no
more. When no agent answers, berth run starts 'berth serve'
in the background (its log goes to <state>/berth-serve.log).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return applyManifests(cmd, opts, o, true)
		},
	}
	bindRunFlags(cmd, &o)
	cmd.Flags().BoolVarP(&o.detach, "detach", "d", false, "return once the pods are sent to the agent")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "show no image pull progress")
	return cmd
}

func newApplyCommand(opts *globalOptions) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Send the pods of Kubernetes manifests to the agent and return (berth run -d)",
		Long: `Validate manifests and send them to the agent, like 'berth run -d'. A pod whose
manifest changed is replaced; an unchanged one is left alone. -f DIR makes the agent watch
the directory, as 'berth run -f DIR' does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.detach = true
			return applyManifests(cmd, opts, o, false)
		},
	}
	bindRunFlags(cmd, &o)
	return cmd
}

func bindRunFlags(cmd *cobra.Command, o *runOptions) {
	cmd.Flags().StringSliceVarP(&o.files, "filename", "f", nil, "manifest file, directory, or - for stdin (repeatable)")
	_ = cmd.MarkFlagRequired("filename") // the flag exists
}

// applyManifests validates the manifests, sends them to the agent (started
// when none runs) and, unless detached, follows the pods.
func applyManifests(cmd *cobra.Command, opts *globalOptions, o runOptions, autostart bool) error {
	requests, err := loadRequests(o.files, cmd.InOrStdin(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	client, err := connectOrStartAgent(cmd, opts, autostart)
	if err != nil {
		return err
	}
	var applied, deployments []agentapi.ApplyResult
	since := time.Now()
	for _, req := range requests {
		resp, err := client.Apply(cmd.Context(), req)
		if err != nil {
			return err
		}
		for _, r := range resp.Objects {
			printApplyResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), r)
			if r.Kind == agentapi.KindDeployment || r.Kind == agentapi.KindStatefulSet || r.Kind == agentapi.KindDaemonSet || r.Kind == agentapi.KindJob {
				deployments = append(deployments, r)
			}
		}
		applied = append(applied, resp.Pods()...)
	}
	if o.detach {
		return nil
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, d := range deployments {
		if d.Kind == agentapi.KindJob {
			if err := followJob(ctx, client, d.Namespace, d.Name, cmd.OutOrStdout()); err != nil {
				return err
			}
			continue
		}
		if err := followRollout(ctx, client, d, cmd.OutOrStdout()); err != nil {
			return err
		}
	}
	f := &follower{client: client, pods: applied, out: cmd.OutOrStdout()}
	if !o.quiet {
		f.pulls = newRunPullDisplay(cmd.ErrOrStderr(), since, applied)
	}
	return f.follow(ctx)
}

// newRunPullDisplay shows pulls on w: bars when it is a terminal.
func newRunPullDisplay(w io.Writer, since time.Time, pods []agentapi.ApplyResult) *pullDisplay {
	tty, width := terminalOf(w)
	return newPullDisplay(w, tty, width, time.Now, since, pods)
}

// printApplyResult prints one object's line as kubectl apply does
// ("deployment.apps/web created"). A skipped object's line is followed, on
// errOut, by a Warning line with the reason, as kubectl prints the API
// server's warnings; so is any other object's message (a pod's ignored
// metadata.uid).
func printApplyResult(out, errOut io.Writer, r agentapi.ApplyResult) {
	label := objectLabel(r.Kind)
	if r.APIVersion != "" {
		label = manifest.ResourceName(r.APIVersion, r.Kind)
	}
	fmt.Fprintf(out, "%s/%s %s\n", label, r.Name, r.Outcome)
	switch {
	case r.Outcome == agentapi.OutcomeSkipped:
		fmt.Fprintf(errOut, "Warning: %s/%s skipped: %s\n", label, r.Name, r.Message)
	case r.Message != "":
		fmt.Fprintf(errOut, "Warning: %s/%s: %s\n", label, r.Name, r.Message)
	}
}

// objectLabel is how kubectl names a kind in apply's output: pod,
// configmap, deployment.apps.
func objectLabel(kind string) string {
	if kind == agentapi.KindDeployment || kind == agentapi.KindReplicaSet || kind == agentapi.KindStatefulSet || kind == agentapi.KindDaemonSet || kind == agentapi.KindJob || kind == agentapi.KindCronJob {
		return kindLabel(kind)
	}
	return strings.ToLower(kind)
}

func connectOrStartAgent(cmd *cobra.Command, opts *globalOptions, autostart bool) (*agentapi.Client, error) {
	if autostart {
		return ensureAgent(cmd, opts)
	}
	return connectAgent(cmd, opts)
}

// loadRequests reads and validates every -f: files and stdin are merged
// into one bundle and validated together (a pod in one file may refer to a
// ConfigMap in another). A directory becomes a watch request: the agent
// keeps its pods, workloads, Services and claims as its files say, as the
// kubelet does its static pod directory. A directory the agent would
// refuse to watch (someone but root can change it: a user's checkout) is
// applied once instead, as 'kubectl apply -f DIR' does, and notes says
// why.
func loadRequests(paths []string, stdin io.Reader, notes io.Writer) ([]agentapi.ApplyRequest, error) {
	var requests []agentapi.ApplyRequest
	merged := &manifest.Bundle{}
	for _, path := range paths {
		b, err := manifest.Load(path, stdin) // its errors name the file
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(path)
		if err == nil && info.IsDir() {
			watch, err := watchRequest(path, b, notes)
			if err != nil {
				return nil, err
			}
			if watch != nil {
				requests = append(requests, *watch)
				continue
			}
		}
		if err := merged.Merge(b); err != nil {
			return nil, err
		}
	}
	if !merged.Empty() {
		if err := merged.Validate(); err != nil {
			return nil, err
		}
		requests = append([]agentapi.ApplyRequest{{Bundle: merged}}, requests...)
	}
	if len(requests) == 0 {
		return nil, errors.New("no objects found in the manifests given with -f")
	}
	return requests, nil
}

// watchRequest is the request to watch dir, whose manifests are b; nil
// when the directory is not one the agent may watch (notes says why: its
// objects are then applied once with the files').
func watchRequest(dir string, b *manifest.Bundle, notes io.Writer) (*agentapi.ApplyRequest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if err := manifest.CheckTrustedDir(real); err != nil {
		fmt.Fprintf(notes, "berth: %s is applied once, not watched (%v): changes to its files take another 'berth apply -f %s'\n", dir, err, dir)
		return nil, nil
	}
	// A watched directory stands alone: its pods and workloads may refer
	// only to ConfigMaps and Secrets inside it.
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &agentapi.ApplyRequest{WatchDir: abs}, nil
}

// follower follows pods for berth run: their status lines, and their
// image pulls while there are some (pulls nil: not shown).
type follower struct {
	client *agentapi.Client
	pods   []agentapi.ApplyResult
	out    io.Writer
	pulls  *pullDisplay
	held   bytes.Buffer // status lines held while a terminal draws a pull
}

// Poll periods: the pods' status, and the pulls while one is shown.
const (
	followPeriod = 300 * time.Millisecond
	pullPeriod   = 100 * time.Millisecond
)

// follow prints a line each time one of the pods changes (by name: a
// replaced pod is followed too) until ctx ends (Ctrl-C detaches).
func (f *follower) follow(ctx context.Context) error {
	if len(f.pods) == 0 {
		return nil
	}
	fmt.Fprintf(f.out, "%-32s %-7s %-26s %s\n", "NAME", "READY", "STATUS", "RESTARTS")
	last := map[string]string{}
	announced := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			f.flushHeld()
			fmt.Fprintln(f.out, "# detached: the pods keep running ('berth get pods', 'berth delete pod NAME')")
			return nil
		case <-timer.C:
		}
		list, err := f.client.ListPods(ctx, "")
		if err != nil && ctx.Err() == nil {
			return err
		}
		pulling := f.showPulls(ctx)
		if err == nil {
			settled := printChanges(f.statusOut(), list.Items, f.pods, last)
			if settled && !announced {
				announced = true
				fmt.Fprintln(f.statusOut(), "# the pods are up (or finished); following them: Ctrl-C detaches, they keep running")
			}
		}
		if !f.pulls.busy() {
			f.flushHeld()
		}
		timer.Reset(followPeriod)
		if pulling {
			timer.Reset(pullPeriod)
		}
	}
}

// showPulls updates the pull display and reports whether a pull is shown
// under way. An agent that cannot list pulls shows none.
func (f *follower) showPulls(ctx context.Context) bool {
	if f.pulls == nil {
		return false
	}
	list, err := f.client.Pulls(ctx, "")
	if err != nil {
		return false
	}
	f.pulls.update(list.Items)
	return f.pulls.active()
}

// statusOut is where status lines go now: held while a terminal draws.
func (f *follower) statusOut() io.Writer {
	if f.pulls.busy() {
		return &f.held
	}
	return f.out
}

func (f *follower) flushHeld() {
	if f.held.Len() > 0 {
		_, _ = f.out.Write(f.held.Bytes())
		f.held.Reset()
	}
}

// printChanges prints the pods whose status line changed and reports
// whether every pod has settled (running and ready, or finished).
func printChanges(out io.Writer, items []v1.Pod, pods []agentapi.ApplyResult, last map[string]string) bool {
	settled := true
	for _, want := range pods {
		key := want.Namespace + "/" + want.Name
		pod := newestPodNamed(items, want.Namespace, want.Name)
		line := fmt.Sprintf("%-32s %-7s %-26s %s", want.Name, "-", "Deleted", "-")
		if pod != nil {
			s := summarizePod(pod)
			line = fmt.Sprintf("%-32s %-7s %-26s %s", pod.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, fmt.Sprint(s.restarts))
			done, _ := podSettled(pod)
			settled = settled && done
		}
		if last[key] != line {
			last[key] = line
			fmt.Fprintln(out, line)
		}
	}
	return settled
}

// newestPodNamed picks the pod a name stands for: the newest one.
func newestPodNamed(items []v1.Pod, namespace, name string) *v1.Pod {
	var found *v1.Pod
	for i := range items {
		p := &items[i]
		if p.Namespace == namespace && p.Name == name && (found == nil || found.CreationTimestamp.Before(&p.CreationTimestamp)) {
			found = p
		}
	}
	return found
}
