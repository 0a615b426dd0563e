package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/errdefs"
)

// workloadResource maps what kubectl accepts for a workload kind
// ("deploy", "deployments.apps", "rs", ...) to the agent API's resource.
func workloadResource(s string) (string, bool) {
	if resource, ok := batchResource(s); ok {
		return resource, true
	}
	switch strings.TrimSuffix(strings.ToLower(s), ".apps") {
	case "deploy", "deployment", "deployments":
		return agentapi.ResourceDeployment, true
	case "rs", "replicaset", "replicasets":
		return agentapi.ResourceReplicaSet, true
	case "ds", "daemonset", "daemonsets":
		return agentapi.ResourceDaemonSet, true
	case "sts", "statefulset", "statefulsets":
		return agentapi.ResourceStatefulSet, true
	case "pvc", "persistentvolumeclaim", "persistentvolumeclaims":
		return agentapi.ResourcePersistentVolumeClaim, true
	}
	if r, ok := serviceResource(s); ok {
		return r, true
	}
	return "", false
}

// splitTypeName reads "deploy/web" (kubectl's TYPE/NAME) into its resource
// and name.
func splitTypeName(s string) (resource, name string, err error) {
	kind, name, found := strings.Cut(s, "/")
	resource, known := workloadResource(kind)
	if !found || !known || name == "" {
		return "", "", fmt.Errorf("%q: want KIND/NAME: deployment/NAME, deploy/, rs/, sts/, ds/, job/, cj/, svc/, pvc/", s)
	}
	return resource, name, nil
}

// kindLabel is how kubectl names a kind in messages: deployment.apps.
func kindLabel(kind string) string {
	if kind == agentapi.KindJob || kind == agentapi.KindCronJob {
		return strings.ToLower(kind) + ".batch"
	}
	if kind == agentapi.KindService { // a core kind: no group
		return "service"
	}
	if kind == agentapi.KindPersistentVolumeClaim {
		return strings.ToLower(kind)
	}
	return strings.ToLower(kind) + ".apps"
}

// selectWorkloads keeps the named objects of list, in the order named.
func selectWorkloads(list agentapi.WorkloadList, resource string, names []string, namespace string) (agentapi.WorkloadList, error) {
	if len(names) == 0 {
		return list, nil
	}
	var out agentapi.WorkloadList
	for _, name := range names {
		found := false
		for _, d := range list.Deployments {
			if d.Name == name {
				out.Deployments, found = append(out.Deployments, d), true
			}
		}
		for _, rs := range list.ReplicaSets {
			if rs.Name == name {
				out.ReplicaSets, found = append(out.ReplicaSets, rs), true
			}
		}
		for _, ds := range list.DaemonSets {
			if ds.Name == name {
				out.DaemonSets, found = append(out.DaemonSets, ds), true
			}
		}
		for _, s := range list.StatefulSets {
			if s.Name == name {
				out.StatefulSets, found = append(out.StatefulSets, s), true
			}
		}
		for _, c := range list.PersistentVolumeClaims {
			if c.Name == name {
				out.PersistentVolumeClaims, found = append(out.PersistentVolumeClaims, c), true
			}
		}
		found = selectServices(list, name, &out) || found
		found = selectBatch(list, &out, name) || found
		if !found {
			return out, fmt.Errorf("%s %q not found in namespace %q: %w", resource, name, namespace, errdefs.ErrNotFound)
		}
	}
	return out, nil
}

// workloadObjects is the list as objects for -o json|yaml.
func workloadObjects(list agentapi.WorkloadList) []any {
	var out []any
	for i := range list.Deployments {
		d := &list.Deployments[i]
		d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		out = append(out, d)
	}
	for i := range list.ReplicaSets {
		rs := &list.ReplicaSets[i]
		rs.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}
		out = append(out, rs)
	}
	for i := range list.DaemonSets {
		ds := &list.DaemonSets[i]
		ds.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
		out = append(out, ds)
	}
	for i := range list.StatefulSets {
		s := &list.StatefulSets[i]
		s.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
		out = append(out, s)
	}
	for i := range list.PersistentVolumeClaims {
		c := &list.PersistentVolumeClaims[i]
		c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
		out = append(out, c)
	}
	out = append(out, serviceObjects(list)...)
	return append(out, batchObjects(list)...)
}

// writeWorkloadTable prints kubectl's columns: NAME READY UP-TO-DATE
// AVAILABLE AGE for Deployments, NAME DESIRED CURRENT READY AGE for
// ReplicaSets, NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE
// SELECTOR AGE for DaemonSets; wide adds CONTAINERS IMAGES SELECTOR.
func writeWorkloadTable(w io.Writer, list agentapi.WorkloadList, resource string, withNamespace, wide bool, now time.Time) error {
	if isServiceResource(resource) {
		return writeServiceTable(w, list, resource, withNamespace, wide, now)
	}
	if len(list.Deployments)+len(list.ReplicaSets)+len(list.DaemonSets)+len(list.StatefulSets)+len(list.PersistentVolumeClaims)+len(list.Jobs)+len(list.CronJobs) == 0 {
		fmt.Fprintln(os.Stderr, "No resources found.")
		return nil
	}
	switch resource {
	case agentapi.ResourceJob, agentapi.ResourceCronJob:
		return writeBatchTable(w, list, withNamespace, wide, now)
	case agentapi.ResourceStatefulSet:
		return writeStatefulSetTable(w, list.StatefulSets, withNamespace, wide, now)
	case agentapi.ResourcePersistentVolumeClaim:
		return writeClaimTable(w, list.PersistentVolumeClaims, withNamespace, wide, now)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tREADY\tUP-TO-DATE\tAVAILABLE\tAGE"
	if resource == agentapi.ResourceReplicaSet {
		header = "NAME\tDESIRED\tCURRENT\tREADY\tAGE"
	}
	if resource == agentapi.ResourceDaemonSet {
		header = daemonSetHeader
	}
	row := func(meta *metav1.ObjectMeta, cells string, spec *v1.PodTemplateSpec, selector *metav1.LabelSelector) {
		line := meta.Name + "\t" + cells + "\t" + age(meta.CreationTimestamp.Time, now)
		if withNamespace {
			line = meta.Namespace + "\t" + line
		}
		if wide {
			line += "\t" + templateColumns(spec) + "\t" + metav1.FormatLabelSelector(selector)
		}
		fmt.Fprintln(tw, line)
	}
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tCONTAINERS\tIMAGES\tSELECTOR"
	}
	fmt.Fprintln(tw, header)
	for i := range list.Deployments {
		d := &list.Deployments[i]
		s := d.Status
		row(&d.ObjectMeta, fmt.Sprintf("%d/%d\t%d\t%d", s.ReadyReplicas, workload.Replicas(d.Spec.Replicas), s.UpdatedReplicas, s.AvailableReplicas), &d.Spec.Template, d.Spec.Selector)
	}
	for i := range list.ReplicaSets {
		rs := &list.ReplicaSets[i]
		s := rs.Status
		row(&rs.ObjectMeta, fmt.Sprintf("%d\t%d\t%d", workload.Replicas(rs.Spec.Replicas), s.Replicas, s.ReadyReplicas), &rs.Spec.Template, rs.Spec.Selector)
	}
	for i := range list.DaemonSets {
		ds := &list.DaemonSets[i]
		row(&ds.ObjectMeta, daemonSetCells(ds), &ds.Spec.Template, ds.Spec.Selector)
	}
	return tw.Flush()
}

// templateColumns is CONTAINERS and IMAGES of the wide output.
func templateColumns(t *v1.PodTemplateSpec) string {
	var names, images []string
	for _, c := range t.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return strings.Join(names, ",") + "\t" + strings.Join(images, ",")
}

// describeWorkload writes kubectl describe's view of a Deployment or
// ReplicaSet.
func describeWorkload(w io.Writer, detail agentapi.WorkloadDetail, now time.Time) error {
	d := describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	if detail.Deployment != nil {
		describeDeployment(d, detail)
	} else if detail.ReplicaSet != nil {
		describeReplicaSet(d, detail)
	} else if detail.DaemonSet != nil {
		describeDaemonSet(d, detail)
	} else if detail.StatefulSet != nil {
		describeStatefulSet(d, detail)
	} else if detail.PersistentVolumeClaim != nil {
		describeClaim(d, detail)
	} else if detail.Service != nil {
		describeService(d, detail)
	} else if detail.Job != nil || detail.CronJob != nil {
		describeBatch(d, detail, now)
	}
	describeEvents(d, detail.Events, now)
	return d.tw.Flush()
}

func describeMeta(d describer, m *metav1.ObjectMeta, selector *metav1.LabelSelector) {
	d.line(0, "Name", "%s", m.Name)
	d.line(0, "Namespace", "%s", m.Namespace)
	d.line(0, "CreationTimestamp", "%s", m.CreationTimestamp.Format(time.RFC1123Z))
	d.line(0, "Selector", "%s", metav1.FormatLabelSelector(selector))
	d.line(0, "Labels", "%s", orNone(joinMap(m.Labels, "\n\t")))
	d.line(0, "Annotations", "%s", orNone(joinMap(m.Annotations, "\n\t")))
	if ref := metav1.GetControllerOf(m); ref != nil {
		d.line(0, "Controlled By", "%s/%s", ref.Kind, ref.Name)
	}
}

func describeDeployment(d describer, detail agentapi.WorkloadDetail) {
	dep := detail.Deployment
	s := dep.Status
	describeMeta(d, &dep.ObjectMeta, dep.Spec.Selector)
	d.line(0, "Replicas", "%d desired | %d updated | %d total | %d available | %d unavailable",
		workload.Replicas(dep.Spec.Replicas), s.UpdatedReplicas, s.Replicas, s.AvailableReplicas, s.UnavailableReplicas)
	d.line(0, "StrategyType", "%s", dep.Spec.Strategy.Type)
	d.line(0, "MinReadySeconds", "%d", dep.Spec.MinReadySeconds)
	if ru := dep.Spec.Strategy.RollingUpdate; ru != nil {
		d.line(0, "RollingUpdateStrategy", "%s max unavailable, %s max surge", ru.MaxUnavailable.String(), ru.MaxSurge.String())
	}
	describeTemplate(d, &dep.Spec.Template)
	d.heading(0, "Conditions")
	fmt.Fprintf(d.tw, "  Type\tStatus\tReason\n  ----\t------\t------\n")
	for _, c := range s.Conditions {
		fmt.Fprintf(d.tw, "  %s\t%s\t%s\n", c.Type, c.Status, c.Reason)
	}
	var newRS []string
	var old []string
	for _, rs := range detail.ReplicaSets {
		line := fmt.Sprintf("%s (%d/%d replicas created)", rs.Name, rs.Status.Replicas, workload.Replicas(rs.Spec.Replicas))
		if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" && newRS == nil && workload.TemplateEqualIgnoringHash(&rs.Spec.Template, &dep.Spec.Template) {
			newRS = append(newRS, line)
		} else if workload.Replicas(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0 {
			old = append(old, line)
		}
	}
	d.line(0, "OldReplicaSets", "%s", orNone(strings.Join(old, ", ")))
	d.line(0, "NewReplicaSet", "%s", orNone(strings.Join(newRS, ", ")))
}

func describeReplicaSet(d describer, detail agentapi.WorkloadDetail) {
	rs := detail.ReplicaSet
	describeMeta(d, &rs.ObjectMeta, rs.Spec.Selector)
	d.line(0, "Replicas", "%d current / %d desired", rs.Status.Replicas, workload.Replicas(rs.Spec.Replicas))
	phases := map[v1.PodPhase]int{}
	for _, p := range detail.Pods {
		if p.DeletionTimestamp == nil {
			phases[p.Status.Phase]++
		}
	}
	d.line(0, "Pods Status", "%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases[v1.PodRunning], phases[v1.PodPending], phases[v1.PodSucceeded], phases[v1.PodFailed])
	describeTemplate(d, &rs.Spec.Template)
}

func describeTemplate(d describer, t *v1.PodTemplateSpec) {
	d.heading(0, "Pod Template")
	d.line(1, "Labels", "%s", orNone(joinMap(t.Labels, "\n\t")))
	if len(t.Annotations) > 0 {
		d.line(1, "Annotations", "%s", joinMap(t.Annotations, "\n\t"))
	}
	d.heading(1, "Containers")
	describeContainers(d, t.Spec.Containers, nil)
	describeVolumes(d, t.Spec.Volumes)
}
