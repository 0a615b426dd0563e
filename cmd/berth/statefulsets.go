package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// writeStatefulSetTable prints kubectl's NAME READY AGE (wide: CONTAINERS
// IMAGES).
func writeStatefulSetTable(w io.Writer, sets []appsv1.StatefulSet, withNamespace, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tREADY\tAGE"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tCONTAINERS\tIMAGES"
	}
	fmt.Fprintln(tw, header)
	for i := range sets {
		s := &sets[i]
		line := fmt.Sprintf("%s\t%d/%d\t%s", s.Name, s.Status.ReadyReplicas, workload.Replicas(s.Spec.Replicas), age(s.CreationTimestamp.Time, now))
		if withNamespace {
			line = s.Namespace + "\t" + line
		}
		if wide {
			line += "\t" + templateColumns(&s.Spec.Template)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// writeClaimTable prints kubectl's NAME STATUS VOLUME CAPACITY ACCESS MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE (wide: VOLUMEMODE).
func writeClaimTable(w io.Writer, claims []v1.PersistentVolumeClaim, withNamespace, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tSTATUS\tVOLUME\tCAPACITY\tACCESS MODES\tSTORAGECLASS\tVOLUMEATTRIBUTESCLASS\tAGE"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tVOLUMEMODE"
	}
	fmt.Fprintln(tw, header)
	for i := range claims {
		c := &claims[i]
		status := string(c.Status.Phase)
		if c.DeletionTimestamp != nil {
			status = "Terminating"
		}
		capacity := ""
		if q, ok := c.Status.Capacity[v1.ResourceStorage]; ok {
			capacity = q.String()
		}
		line := strings.Join([]string{c.Name, status, c.Spec.VolumeName, capacity, accessModes(c.Status.AccessModes),
			orUnset(ptr.Deref(c.Spec.StorageClassName, "")), orUnset(ptr.Deref(c.Spec.VolumeAttributesClassName, "")), age(c.CreationTimestamp.Time, now)}, "\t")
		if withNamespace {
			line = c.Namespace + "\t" + line
		}
		if wide {
			line += "\tFilesystem"
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// className is describe's StorageClass: the name, or nothing.
func className(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// accessModes abbreviates as kubectl: RWO,ROX,RWX,RWOP.
func accessModes(modes []v1.PersistentVolumeAccessMode) string {
	short := map[v1.PersistentVolumeAccessMode]string{v1.ReadWriteOnce: "RWO", v1.ReadOnlyMany: "ROX", v1.ReadWriteMany: "RWX", v1.ReadWriteOncePod: "RWOP"}
	var out []string
	for _, m := range modes {
		out = append(out, short[m])
	}
	return strings.Join(out, ",")
}

func describeStatefulSet(d describer, detail agentapi.WorkloadDetail) {
	s := detail.StatefulSet
	describeMeta(d, &s.ObjectMeta, s.Spec.Selector)
	d.line(0, "Replicas", "%d desired | %d total", workload.Replicas(s.Spec.Replicas), s.Status.Replicas)
	d.line(0, "Update Strategy", "%s", s.Spec.UpdateStrategy.Type)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		d.line(1, "Partition", "%d", *ru.Partition)
	}
	phases := map[v1.PodPhase]int{}
	for _, p := range detail.Pods {
		if p.DeletionTimestamp == nil {
			phases[p.Status.Phase]++
		}
	}
	d.line(0, "Pods Status", "%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases[v1.PodRunning], phases[v1.PodPending], phases[v1.PodSucceeded], phases[v1.PodFailed])
	describeTemplate(d, &s.Spec.Template)
	d.heading(0, "Volume Claims")
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		d.line(1, "", "<none>")
	}
	for _, c := range s.Spec.VolumeClaimTemplates {
		d.line(1, "Name", "%s", c.Name)
		d.line(1, "StorageClass", "%s", className(c.Spec.StorageClassName))
		d.line(1, "Labels", "%s", orNone(joinMap(c.Labels, "\n\t")))
		d.line(1, "Annotations", "%s", orNone(joinMap(c.Annotations, "\n\t")))
		q := c.Spec.Resources.Requests[v1.ResourceStorage]
		d.line(1, "Capacity", "%s", q.String())
		d.line(1, "Access Modes", "%s", strings.Join(modeNames(c.Spec.AccessModes), ","))
	}
}

func modeNames(modes []v1.PersistentVolumeAccessMode) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}

func describeClaim(d describer, detail agentapi.WorkloadDetail) {
	c := detail.PersistentVolumeClaim
	d.line(0, "Name", "%s", c.Name)
	d.line(0, "Namespace", "%s", c.Namespace)
	d.line(0, "StorageClass", "%s", className(c.Spec.StorageClassName))
	status := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		status = fmt.Sprintf("Terminating (lasts %s)", age(c.DeletionTimestamp.Time, time.Now()))
	}
	d.line(0, "Status", "%s", status)
	d.line(0, "Volume", "%s", c.Spec.VolumeName)
	d.line(0, "Labels", "%s", orNone(joinMap(c.Labels, "\n\t")))
	d.line(0, "Annotations", "%s", orNone(joinMap(c.Annotations, "\n\t")))
	d.line(0, "Finalizers", "[%s]", strings.Join(c.Finalizers, " "))
	q := c.Status.Capacity[v1.ResourceStorage]
	d.line(0, "Capacity", "%s", q.String())
	d.line(0, "Access Modes", "%s", accessModes(c.Status.AccessModes))
	d.line(0, "VolumeMode", "%s", v1.PersistentVolumeFilesystem)
	d.line(0, "Used By", "%s", orNone(strings.Join(detail.UsedBy, "\n\t")))
}

// statefulSetRolloutMessage is kubectl rollout status's line for a
// StatefulSet, and whether its rollout is complete.
func statefulSetRolloutMessage(s *appsv1.StatefulSet) (string, bool, error) {
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
	}
	st, replicas := s.Status, workload.Replicas(s.Spec.Replicas)
	switch {
	case s.Status.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration:
		return "Waiting for statefulset spec update to be observed...\n", false, nil
	case st.ReadyReplicas < replicas:
		return fmt.Sprintf("Waiting for %d pods to be ready...\n", replicas-st.ReadyReplicas), false, nil
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		if st.UpdatedReplicas < replicas-*ru.Partition {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n", st.UpdatedReplicas, replicas-*ru.Partition), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n", st.UpdatedReplicas, st.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.CurrentReplicas, st.CurrentRevision), true, nil
}

// statefulSetHistory lists a set's ControllerRevisions.
func statefulSetHistory(out io.Writer, name string, revisions []appsv1.ControllerRevision) error {
	sort.Slice(revisions, func(i, j int) bool { return revisions[i].Revision < revisions[j].Revision })
	fmt.Fprintf(out, "statefulset.apps/%s\n", name)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, r := range revisions {
		fmt.Fprintf(tw, "%s\t%s\n", strconv.FormatInt(r.Revision, 10), orNone(r.Annotations["kubernetes.io/change-cause"]))
	}
	return tw.Flush()
}

// rolloutTarget is the object a rollout subcommand acts on.
type rolloutTarget struct{ resource, namespace, name string }

// rolloutStatusOf follows a Deployment's or a StatefulSet's rollout.
func rolloutStatusOf(ctx context.Context, client *agentapi.Client, t rolloutTarget, out io.Writer) error {
	return rolloutStatus(ctx, client, t.resource, t.namespace, t.name, out)
}

// rolloutHistoryOf lists a Deployment's or a StatefulSet's revisions.
func rolloutHistoryOf(ctx context.Context, client *agentapi.Client, t rolloutTarget, out io.Writer) error {
	if t.resource == agentapi.ResourceDeployment {
		return rolloutHistory(ctx, client, t.namespace, t.name, out)
	}
	detail, err := client.DescribeWorkload(ctx, t.resource, t.namespace, t.name)
	if err != nil {
		return err
	}
	return statefulSetHistory(out, t.name, detail.Revisions)
}

// followRollout follows an applied Deployment's, StatefulSet's or
// DaemonSet's rollout for berth run (an OnDelete StatefulSet or DaemonSet
// has none to follow).
func followRollout(ctx context.Context, client *agentapi.Client, r agentapi.ApplyResult, out io.Writer) error {
	switch r.Kind {
	case agentapi.KindDeployment:
		return rolloutStatus(ctx, client, agentapi.ResourceDeployment, r.Namespace, r.Name, out)
	case agentapi.KindDaemonSet:
		detail, err := client.DescribeWorkload(ctx, agentapi.ResourceDaemonSet, r.Namespace, r.Name)
		if err != nil {
			return err
		}
		if detail.DaemonSet.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
			return nil
		}
		return rolloutStatus(ctx, client, agentapi.ResourceDaemonSet, r.Namespace, r.Name, out)
	}
	detail, err := client.DescribeWorkload(ctx, agentapi.ResourceStatefulSet, r.Namespace, r.Name)
	if err != nil {
		return err
	}
	if detail.StatefulSet.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return nil
	}
	return rolloutStatusOf(ctx, client, rolloutTarget{resource: agentapi.ResourceStatefulSet, namespace: r.Namespace, name: r.Name}, out)
}
