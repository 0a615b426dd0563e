package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/errdefs"
)

// getOptions are the flags of `berth get pods`.
type getOptions struct {
	namespace     string
	allNamespaces bool
	output        string // "", wide, json, yaml
	showLabels    bool   // a last LABELS column (nodes)
}

func newGetCommand(opts *globalOptions) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get (pods|deployments|replicasets|statefulsets|daemonsets|jobs|cronjobs|pvc|services|endpointslices) [NAME...] | get nodes [NAME] | get events",
		Short: "List the agent's pods, workloads, claims, Services, EndpointSlices or its node with their status, like kubectl get",
		Long: `List the pods the agent runs: NAME READY STATUS RESTARTS AGE (-o wide adds IP
and NODE); Deployments (deploy): NAME READY UP-TO-DATE AVAILABLE AGE; ReplicaSets (rs):
NAME DESIRED CURRENT READY AGE (-o wide adds CONTAINERS IMAGES SELECTOR); StatefulSets (sts):
NAME READY AGE; DaemonSets (ds): NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR
AGE; Jobs (job): NAME STATUS COMPLETIONS DURATION AGE; CronJobs (cj): NAME SCHEDULE TIMEZONE
SUSPEND ACTIVE LAST SCHEDULE AGE; PersistentVolumeClaims (pvc): NAME STATUS VOLUME CAPACITY
ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE; Services (svc): NAME TYPE CLUSTER-IP
EXTERNAL-IP PORT(S) AGE (-o wide adds SELECTOR); EndpointSlices: NAME ADDRESSTYPE PORTS
ENDPOINTS AGE; the node: NAME STATUS ROLES AGE VERSION (--show-labels adds LABELS); events
(ev): as berth events, LAST SEEN TYPE REASON OBJECT MESSAGE. -o json and
-o yaml print the objects with their full status.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completePodNames(opts, "pods", 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isNodesResource(args[0]) {
				return getNodes(cmd, opts, o.output, o.showLabels, args[1:])
			}
			if isEventsResource(args[0]) {
				return getEvents(cmd, opts, o, args[1:])
			}
			resource, isWorkload := workloadResource(args[0])
			if !isPodsResource(args[0]) && !isWorkload {
				return fmt.Errorf("resource %q: berth knows pods, deployments (deploy), replicasets (rs), statefulsets (sts), daemonsets (ds), jobs, cronjobs (cj), persistentvolumeclaims (pvc), services (svc), endpointslices, nodes and events", args[0])
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			ns := o.namespace
			if o.allNamespaces {
				ns = ""
			}
			if isWorkload {
				return getWorkloads(cmd, client, resource, args[1:], ns, o)
			}
			list, err := client.ListPods(cmd.Context(), ns)
			if err != nil {
				return err
			}
			pods, err := selectPods(list.Items, args[1:], ns)
			if err != nil {
				return err
			}
			return writePods(cmd.OutOrStdout(), pods, o, len(args) == 2)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	f.BoolVar(&o.showLabels, "show-labels", false, "show the node's labels as the last column (nodes)")
	return cmd
}

// getWorkloads lists Deployments or ReplicaSets.
func getWorkloads(cmd *cobra.Command, client *agentapi.Client, resource string, names []string, ns string, o getOptions) error {
	list, err := client.ListWorkloads(cmd.Context(), resource, ns)
	if err != nil {
		return err
	}
	if list, err = selectWorkloads(list, resource, names, ns); err != nil {
		return err
	}
	objects := workloadObjects(list)
	switch o.output {
	case "", "wide":
		return writeWorkloadTable(cmd.OutOrStdout(), list, resource, o.allNamespaces, o.output == "wide", time.Now())
	case "json", "yaml":
		var obj any = &v1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}, Items: rawObjects(objects)}
		if len(names) == 1 && len(objects) == 1 {
			obj = objects[0]
		}
		return writeObject(cmd.OutOrStdout(), obj, o.output)
	}
	return fmt.Errorf("output format %q: want wide, json or yaml", o.output)
}

func isPodsResource(s string) bool { return s == "pods" || s == "pod" || s == "po" }

// selectPods keeps the named pods, in the order named; every name must
// exist. No names keeps every pod, sorted by namespace and name.
func selectPods(pods []v1.Pod, names []string, namespace string) ([]v1.Pod, error) {
	if len(names) == 0 {
		sort.Slice(pods, func(i, j int) bool {
			if pods[i].Namespace != pods[j].Namespace {
				return pods[i].Namespace < pods[j].Namespace
			}
			return pods[i].Name < pods[j].Name
		})
		return pods, nil
	}
	var out []v1.Pod
	for _, name := range names {
		found := false
		for _, p := range pods {
			if p.Name == name {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("pod %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
		}
	}
	return out, nil
}

// writePods prints pods in the format o asks for; single prints a lone
// pod (not a list) for json and yaml, as kubectl does when named.
func writePods(w io.Writer, pods []v1.Pod, o getOptions, single bool) error {
	for i := range pods {
		pods[i].TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	}
	var obj any = &v1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}, Items: rawPods(pods)}
	if single && len(pods) == 1 {
		obj = &pods[0]
	}
	switch o.output {
	case "", "wide":
		if len(pods) == 0 {
			fmt.Fprintln(os.Stderr, "No resources found.")
			return nil
		}
		return writePodTable(w, pods, o.allNamespaces, o.output == "wide", time.Now())
	case "json", "yaml":
		return writeObject(w, obj, o.output)
	}
	return fmt.Errorf("output format %q: want wide, json or yaml", o.output)
}

// writeObject prints obj as indented JSON or as YAML.
func writeObject(w io.Writer, obj any, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(obj)
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func rawPods(pods []v1.Pod) []runtime.RawExtension {
	objects := make([]any, len(pods))
	for i := range pods {
		objects[i] = &pods[i]
	}
	return rawObjects(objects)
}

func rawObjects(objects []any) []runtime.RawExtension {
	out := make([]runtime.RawExtension, len(objects))
	for i, o := range objects {
		data, _ := json.Marshal(o) // API objects always encode
		out[i].Raw = data
	}
	return out
}

// writePodTable prints kubectl's pod columns.
func writePodTable(w io.Writer, pods []v1.Pod, withNamespace, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tREADY\tSTATUS\tRESTARTS\tAGE"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tIP\tNODE"
	}
	fmt.Fprintln(tw, header)
	for i := range pods {
		p := &pods[i]
		s := summarizePod(p)
		row := fmt.Sprintf("%s\t%d/%d\t%s\t%s\t%s", p.Name, s.ready, s.total, s.status, s.restartsColumn(now), age(p.CreationTimestamp.Time, now))
		if withNamespace {
			row = p.Namespace + "\t" + row
		}
		if wide {
			row += "\t" + orNone(p.Status.PodIP) + "\t" + orNone(p.Spec.NodeName)
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// isEventsResource reports whether a get argument names events.
func isEventsResource(s string) bool { return s == "events" || s == "event" || s == "ev" }

// getEvents is `berth get events`: the table of `berth events`.
func getEvents(cmd *cobra.Command, opts *globalOptions, o getOptions, names []string) error {
	if len(names) > 0 {
		return fmt.Errorf("berth get events: names are not taken; use 'berth events --for KIND/NAME'")
	}
	if o.output != "" {
		return fmt.Errorf("berth get events: -o %s: only the table is printed", o.output)
	}
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return err
	}
	return runEvents(cmd, client, eventsOptions{namespace: o.namespace, allNamespaces: o.allNamespaces})
}
