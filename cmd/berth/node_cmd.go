package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/errdefs"
)

func isNodesResource(s string) bool { return s == "nodes" || s == "node" || s == "no" }

// kubectlTime is how kubectl describe prints times.
const kubectlTime = "Mon, 02 Jan 2006 15:04:05 -0700"

// fetchNode asks the agent for its node; a name other than the node's is
// not found.
func fetchNode(cmd *cobra.Command, opts *globalOptions, names []string) (agentapi.NodeDetail, error) {
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return agentapi.NodeDetail{}, err
	}
	detail, err := client.Node(cmd.Context())
	if err != nil {
		return detail, err
	}
	for _, name := range names {
		if name != detail.Node.Name {
			return detail, fmt.Errorf("node %q not found (this agent's node is %q): %w", name, detail.Node.Name, errdefs.ErrNotFound)
		}
	}
	return detail, nil
}

// getNodes is `berth get nodes [NAME]`: kubectl's columns NAME STATUS
// ROLES AGE VERSION (-o wide adds INTERNAL-IP EXTERNAL-IP OS-IMAGE
// KERNEL-VERSION CONTAINER-RUNTIME), or the node as JSON or YAML.
// --show-labels adds LABELS.
func getNodes(cmd *cobra.Command, opts *globalOptions, output string, showLabels bool, names []string) error {
	detail, err := fetchNode(cmd, opts, names)
	if err != nil {
		return err
	}
	return writeNode(cmd.OutOrStdout(), &detail.Node, output, showLabels, time.Now())
}

func writeNode(w io.Writer, node *v1.Node, output string, showLabels bool, now time.Time) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(node)
	case "yaml":
		data, err := yaml.Marshal(node)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "", "wide":
	default:
		return fmt.Errorf("output format %q: want wide, json or yaml", output)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header, row := "NAME\tSTATUS\tROLES\tAGE\tVERSION", fmt.Sprintf("%s\t%s\t%s\t%s\t%s",
		node.Name, nodeStatus(node), nodeRoles(node), age(node.CreationTimestamp.Time, now), node.Status.NodeInfo.KubeletVersion)
	if output == "wide" {
		info := node.Status.NodeInfo
		header += "\tINTERNAL-IP\tEXTERNAL-IP\tOS-IMAGE\tKERNEL-VERSION\tCONTAINER-RUNTIME"
		row += fmt.Sprintf("\t%s\t%s\t%s\t%s\t%s", nodeAddress(node, v1.NodeInternalIP), nodeAddress(node, v1.NodeExternalIP),
			orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion))
	}
	if showLabels {
		header += "\tLABELS"
		row += "\t" + labelsColumn(node.Labels)
	}
	fmt.Fprintln(tw, header)
	fmt.Fprintln(tw, row)
	return tw.Flush()
}

// nodeStatus is kubectl's STATUS column: Ready, NotReady or Unknown.
func nodeStatus(node *v1.Node) string {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			switch c.Status {
			case v1.ConditionTrue:
				return "Ready"
			case v1.ConditionFalse:
				return "NotReady"
			}
		}
	}
	return "Unknown"
}

// nodeRoles lists the node-role.kubernetes.io/ROLE labels, as kubectl.
func nodeRoles(node *v1.Node) string {
	var roles []string
	for k := range node.Labels {
		if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && role != "" {
			roles = append(roles, role)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func nodeAddress(node *v1.Node, typ v1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

// describeNodeCommand is `berth describe node [NAME]`.
func describeNodeCommand(cmd *cobra.Command, opts *globalOptions, names []string) error {
	detail, err := fetchNode(cmd, opts, names)
	if err != nil {
		return err
	}
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return err
	}
	pods, err := client.ListPods(cmd.Context(), "")
	if err != nil {
		return err
	}
	return describeNode(cmd.OutOrStdout(), detail, pods.Items, time.Now())
}

// describeNode prints kubectl describe node's sections.
func describeNode(w io.Writer, detail agentapi.NodeDetail, pods []v1.Pod, now time.Time) error {
	node := &detail.Node
	d := describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	d.line(0, "Name", "%s", node.Name)
	d.line(0, "Roles", "%s", nodeRoles(node))
	labels := sortedPairs(node.Labels)
	if len(labels) == 0 {
		labels = []string{"<none>"}
	}
	d.line(0, "Labels", "%s", labels[0])
	for _, l := range labels[1:] {
		fmt.Fprintf(d.tw, "\t%s\n", l)
	}
	d.line(0, "CreationTimestamp", "%s", node.CreationTimestamp.Format(kubectlTime))
	describeTaints(d, node.Spec.Taints)
	d.line(0, "Unschedulable", "%t", node.Spec.Unschedulable)
	d.heading(0, "Conditions")
	fmt.Fprintf(d.tw, "  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
	fmt.Fprintf(d.tw, "  ----\t------\t-----------------\t------------------\t------\t-------\n")
	for _, c := range node.Status.Conditions {
		fmt.Fprintf(d.tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status,
			c.LastHeartbeatTime.Format(kubectlTime), c.LastTransitionTime.Format(kubectlTime), c.Reason, c.Message)
	}
	d.heading(0, "Addresses")
	for _, a := range node.Status.Addresses {
		d.line(1, string(a.Type), "%s", a.Address)
	}
	describeResources(d, "Capacity", node.Status.Capacity)
	describeResources(d, "Allocatable", node.Status.Allocatable)
	info := node.Status.NodeInfo
	d.heading(0, "System Info")
	for _, kv := range [][2]string{
		{"Machine ID", info.MachineID}, {"Boot ID", info.BootID}, {"Kernel Version", info.KernelVersion},
		{"OS Image", info.OSImage}, {"Operating System", info.OperatingSystem}, {"Architecture", info.Architecture},
		{"Container Runtime Version", info.ContainerRuntimeVersion}, {"Kubelet Version", info.KubeletVersion},
	} {
		d.line(1, kv[0], "%s", kv[1])
	}
	describeNodePods(d, node, pods, now)
	describeEvents(d, detail.Events, now)
	return d.tw.Flush()
}

func describeResources(d describer, heading string, list v1.ResourceList) {
	d.heading(0, heading)
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := list[v1.ResourceName(name)]
		d.line(1, name, "%s", q.String())
	}
}

// describeNodePods is kubectl's "Non-terminated Pods" table: requests and
// limits of cpu and memory, with their share of allocatable.
func describeNodePods(d describer, node *v1.Node, pods []v1.Pod, now time.Time) {
	var running []v1.Pod
	for _, p := range pods {
		// kubectl selects spec.nodeName: a pod waiting unscheduled is
		// not the node's.
		if p.Spec.NodeName == node.Name && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			running = append(running, p)
		}
	}
	d.line(0, "Non-terminated Pods", "(%d in total)", len(running))
	fmt.Fprintf(d.tw, "  Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
	fmt.Fprintf(d.tw, "  ---------\t----\t------------\t----------\t---------------\t-------------\t---\n")
	alloc := node.Status.Allocatable
	for i := range running {
		p := &running[i]
		req, lim := podspec.PodRequests(p), podspec.PodLimits(p)
		fmt.Fprintf(d.tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name,
			share(req, alloc, v1.ResourceCPU), share(lim, alloc, v1.ResourceCPU),
			share(req, alloc, v1.ResourceMemory), share(lim, alloc, v1.ResourceMemory), age(p.CreationTimestamp.Time, now))
	}
}

// share is "100m (5%)", as kubectl prints a pod's part of allocatable.
func share(list, alloc v1.ResourceList, name v1.ResourceName) string {
	q, ok := list[name]
	if !ok {
		q = *resource.NewQuantity(0, resource.DecimalSI)
	}
	total := alloc[name]
	pct := int64(0)
	if total.MilliValue() > 0 {
		pct = q.MilliValue() * 100 / total.MilliValue()
	}
	return fmt.Sprintf("%s (%d%%)", q.String(), pct)
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// labelsColumn is kubectl's LABELS column: key=value sorted, comma-separated.
func labelsColumn(labels map[string]string) string {
	if len(labels) == 0 {
		return "<none>"
	}
	return strings.Join(sortedPairs(labels), ",")
}

// describeTaints is kubectl's Taints field: one key=value:Effect a line.
func describeTaints(d describer, taints []v1.Taint) {
	if len(taints) == 0 {
		d.line(0, "Taints", "<none>")
		return
	}
	d.line(0, "Taints", "%s", taints[0].ToString())
	for _, t := range taints[1:] {
		fmt.Fprintf(d.tw, "\t%s\n", t.ToString())
	}
}
