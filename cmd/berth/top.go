package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// topOptions are the flags of `berth top pods`.
type topOptions struct {
	namespace     string
	allNamespaces bool
	containers    bool
	sortBy        string
	noHeaders     bool
}

// sampleGap is the wait between two stats samples when the runtime does
// not report a CPU rate (usage_nano_cores) at once.
const sampleGap = time.Second

func newTopCommand(opts *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top (pods | node)",
		Short: "Show the CPU and memory use of pods or of the node, like kubectl top",
		Long: `Show resource use: CPU in millicores (the rate the runtime reports as usage_nano_cores,
else the CPU time of two samples a second apart) and memory as the working set, in MiB.
berth top pods reads CRI ListPodSandboxStats (ListContainerStats with --containers) for the
agent's pods; berth top node reads the host's /proc/stat and /proc/meminfo, and the image
file system's use from CRI ImageFsInfo.`,
	}
	cmd.AddCommand(newTopPodsCommand(opts), newTopNodeCommand(opts))
	return cmd
}

func newTopPodsCommand(opts *globalOptions) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:               "pods [NAME]",
		Aliases:           []string{"pod", "po"},
		Short:             "Show the CPU and memory use of the agent's pods",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.sortBy != "" && o.sortBy != "cpu" && o.sortBy != "memory" {
				return fmt.Errorf("--sort-by %q: want cpu or memory", o.sortBy)
			}
			cri, err := dialRuntime(cmd, opts)
			if err != nil {
				return err
			}
			defer cri.Close()
			rows, err := sampleUsage(cmd.Context(), cri.RuntimeService(), o.containers)
			if err != nil {
				return err
			}
			rows = selectUsage(rows, o, args)
			if len(rows) == 0 {
				return noUsage(cmd, o, args)
			}
			return writeTopPods(cmd.OutOrStdout(), rows, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "the pods of every namespace")
	f.BoolVar(&o.containers, "containers", false, "one line per container")
	f.StringVar(&o.sortBy, "sort-by", "", "cpu or memory (highest first)")
	f.BoolVar(&o.noHeaders, "no-headers", false, "print no header line")
	return cmd
}

func dialRuntime(cmd *cobra.Command, opts *globalOptions) (*criclient.CRIClient, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, err
	}
	return criclient.Dial(runtimeEndpoint(cfg))
}

func noUsage(cmd *cobra.Command, o topOptions, args []string) error {
	if len(args) == 1 {
		return fmt.Errorf("pod %q in namespace %q: no stats (not found, or its sandbox is not ready)", args[0], o.namespace)
	}
	if o.allNamespaces {
		fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", o.namespace)
	}
	return nil
}

// usage is the resource use of one pod, or of one container with
// --containers.
type usage struct {
	namespace, pod, container string
	nanoCores                 uint64
	workingSet                uint64
}

// cpuSample is what a stats sample says of CPU.
type cpuSample struct {
	nanoCores  *uint64 // the runtime's rate, when it has one
	cumulative uint64  // CPU time in ns
	at         int64   // Unix ns
}

func sampleOf(c *runtimeapi.CpuUsage) cpuSample {
	s := cpuSample{cumulative: c.GetUsageCoreNanoSeconds().GetValue(), at: c.GetTimestamp()}
	if v := c.GetUsageNanoCores(); v != nil {
		n := v.GetValue()
		s.nanoCores = &n
	}
	return s
}

// cpuRate is the CPU use in nano cores: the runtime's rate in the later
// sample, else the CPU time between the samples over their distance; ok
// is false when neither says anything (one sample, no rate).
func cpuRate(first, second cpuSample, haveFirst bool) (uint64, bool) {
	if second.nanoCores != nil {
		return *second.nanoCores, true
	}
	if !haveFirst || second.at <= first.at || second.cumulative < first.cumulative {
		return 0, false
	}
	return uint64(float64(second.cumulative-first.cumulative) / float64(second.at-first.at) * 1e9), true
}

// statsSample is one look at the agent's pods (or containers): the usage
// rows and their CPU samples, by the sandbox's (or container's) id.
type statsSample struct {
	rows map[string]usage
	cpu  map[string]cpuSample
}

// sampleUsage reads the use of the agent's ready pods or running
// containers; when the runtime gives no CPU rate for one of them, it
// samples again after sampleGap and computes the rate itself.
func sampleUsage(ctx context.Context, rt runtimeapi.RuntimeServiceClient, containers bool) ([]usage, error) {
	read := readPodStats
	if containers {
		read = readContainerStats
	}
	first, err := read(ctx, rt)
	if err != nil {
		return nil, err
	}
	var second statsSample
	if allRates(first) {
		second, first = first, statsSample{}
	} else {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(sampleGap):
		}
		if second, err = read(ctx, rt); err != nil {
			return nil, err
		}
	}
	var rows []usage
	for id, row := range second.rows {
		prev, had := first.cpu[id]
		row.nanoCores, _ = cpuRate(prev, second.cpu[id], had)
		rows = append(rows, row)
	}
	return rows, nil
}

func allRates(s statsSample) bool {
	for _, c := range s.cpu {
		if c.nanoCores == nil {
			return false
		}
	}
	return true
}

// readPodStats samples the agent's ready sandboxes.
func readPodStats(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (statsSample, error) {
	ready, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{podspec.LabelAgent: "true"},
	}})
	if err != nil {
		return statsSample{}, fmt.Errorf("top: list pod sandboxes: %w", err)
	}
	resp, err := rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{
		LabelSelector: map[string]string{podspec.LabelAgent: "true"},
	}})
	if err != nil {
		return statsSample{}, fmt.Errorf("top: pod sandbox stats: %w", err)
	}
	isReady := map[string]bool{}
	for _, s := range ready.GetItems() {
		isReady[s.GetId()] = true
	}
	out := statsSample{rows: map[string]usage{}, cpu: map[string]cpuSample{}}
	for _, st := range resp.GetStats() {
		attrs, linux := st.GetAttributes(), st.GetLinux()
		if !isReady[attrs.GetId()] || linux == nil {
			continue
		}
		md := attrs.GetMetadata()
		out.rows[attrs.GetId()] = usage{namespace: md.GetNamespace(), pod: md.GetName(), workingSet: linux.GetMemory().GetWorkingSetBytes().GetValue()}
		out.cpu[attrs.GetId()] = sampleOf(linux.GetCpu())
	}
	return out, nil
}

// readContainerStats samples the agent's running containers.
func readContainerStats(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (statsSample, error) {
	agent := map[string]string{podspec.LabelAgent: "true"}
	running, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: agent,
	}})
	if err != nil {
		return statsSample{}, fmt.Errorf("top: list containers: %w", err)
	}
	resp, err := rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{LabelSelector: agent}})
	if err != nil {
		return statsSample{}, fmt.Errorf("top: container stats: %w", err)
	}
	isRunning := map[string]bool{}
	for _, c := range running.GetContainers() {
		isRunning[c.GetId()] = true
	}
	out := statsSample{rows: map[string]usage{}, cpu: map[string]cpuSample{}}
	for _, st := range resp.GetStats() {
		attrs := st.GetAttributes()
		if !isRunning[attrs.GetId()] {
			continue
		}
		l := attrs.GetLabels()
		out.rows[attrs.GetId()] = usage{
			namespace: l[podspec.LabelPodNamespace], pod: l[podspec.LabelPodName], container: attrs.GetMetadata().GetName(),
			workingSet: st.GetMemory().GetWorkingSetBytes().GetValue(),
		}
		out.cpu[attrs.GetId()] = sampleOf(st.GetCpu())
	}
	return out, nil
}

// selectUsage keeps the rows of the namespace (every one with -A) and of
// the named pod, sorted by namespace, pod and container, or highest first
// by --sort-by.
func selectUsage(rows []usage, o topOptions, names []string) []usage {
	var out []usage
	for _, r := range rows {
		if (o.allNamespaces || r.namespace == o.namespace) && (len(names) == 0 || r.pod == names[0]) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case o.sortBy == "cpu" && a.nanoCores != b.nanoCores:
			return a.nanoCores > b.nanoCores
		case o.sortBy == "memory" && a.workingSet != b.workingSet:
			return a.workingSet > b.workingSet
		case a.namespace != b.namespace:
			return a.namespace < b.namespace
		case a.pod != b.pod:
			return a.pod < b.pod
		}
		return a.container < b.container
	})
	return out
}

// writeTopPods prints kubectl top pod's table: [NAMESPACE] NAME
// CPU(cores) MEMORY(bytes), or [NAMESPACE] POD NAME CPU(cores)
// MEMORY(bytes) with --containers.
func writeTopPods(w io.Writer, rows []usage, o topOptions) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !o.noHeaders {
		header := "NAME\tCPU(cores)\tMEMORY(bytes)"
		if o.containers {
			header = "POD\t" + header
		}
		if o.allNamespaces {
			header = "NAMESPACE\t" + header
		}
		fmt.Fprintln(tw, header)
	}
	for _, r := range rows {
		if o.allNamespaces {
			fmt.Fprint(tw, r.namespace+"\t")
		}
		fmt.Fprint(tw, r.pod+"\t")
		if o.containers {
			fmt.Fprint(tw, r.container+"\t")
		}
		fmt.Fprintf(tw, "%s\t%s\n", formatCPU(r.nanoCores), formatMemory(r.workingSet))
	}
	return tw.Flush()
}

// formatCPU prints nano cores as kubectl top does: millicores, rounded up.
func formatCPU(nanoCores uint64) string { return fmt.Sprintf("%dm", (nanoCores+999_999)/1_000_000) }

// formatMemory prints bytes as kubectl top does: whole MiB.
func formatMemory(bytes uint64) string { return fmt.Sprintf("%dMi", bytes/(1<<20)) }
