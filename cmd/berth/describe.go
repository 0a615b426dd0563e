package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func newDescribeCommand(opts *globalOptions) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:               "describe (pod|deployment|replicaset|statefulset|daemonset|job|cronjob|pvc|service) NAME | describe node [NAME]",
		Short:             "Show the details and events of a pod, workload, claim, Service or the node, like kubectl describe",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completePodNames(opts, "pod", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isNodesResource(args[0]) {
				return describeNodeCommand(cmd, opts, args[1:])
			}
			resource, isWorkload := workloadResource(args[0])
			if !isPodsResource(args[0]) && !isWorkload {
				return fmt.Errorf("resource %q: berth knows pods, deployments (deploy), replicasets (rs), statefulsets (sts), daemonsets (ds), jobs, cronjobs (cj), persistentvolumeclaims (pvc), services (svc) and nodes", args[0])
			}
			if len(args) != 2 {
				return fmt.Errorf("berth describe %s: want one NAME", args[0])
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			if isWorkload {
				detail, err := client.DescribeWorkload(cmd.Context(), resource, namespace, args[1])
				if err != nil {
					return err
				}
				return describeWorkload(cmd.OutOrStdout(), detail, time.Now())
			}
			detail, err := client.DescribePod(cmd.Context(), namespace, args[1])
			if err != nil {
				return err
			}
			return describePod(cmd.OutOrStdout(), detail, time.Now())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace")
	return cmd
}

// describer writes "Key: value" lines aligned per section, as kubectl does.
type describer struct {
	tw *tabwriter.Writer
}

func (d describer) line(indent int, key, format string, args ...any) {
	fmt.Fprintf(d.tw, "%s%s:\t%s\n", strings.Repeat("  ", indent), key, fmt.Sprintf(format, args...))
}

func (d describer) heading(indent int, text string) {
	fmt.Fprintf(d.tw, "%s%s:\n", strings.Repeat("  ", indent), text)
}

func describePod(w io.Writer, detail agentapi.PodDetail, now time.Time) error {
	pod := &detail.Pod
	d := describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	d.line(0, "Name", "%s", pod.Name)
	d.line(0, "Namespace", "%s", pod.Namespace)
	d.line(0, "UID", "%s", pod.UID)
	d.line(0, "Node", "%s", orNone(pod.Spec.NodeName))
	if pod.Status.StartTime != nil {
		d.line(0, "Start Time", "%s", pod.Status.StartTime.Format(time.RFC1123Z))
	}
	d.line(0, "Labels", "%s", joinMap(pod.Labels, "\n\t"))
	d.line(0, "Annotations", "%s", joinMap(pod.Annotations, "\n\t"))
	status := string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		status = "Terminating (lasts " + pod.DeletionTimestamp.Sub(now).Round(time.Second).String() + ")"
	}
	d.line(0, "Status", "%s", status)
	if pod.Status.Reason != "" {
		d.line(0, "Reason", "%s", pod.Status.Reason)
		d.line(0, "Message", "%s", pod.Status.Message)
	}
	d.line(0, "IP", "%s", pod.Status.PodIP)
	if len(pod.Spec.InitContainers) > 0 {
		d.heading(0, "Init Containers")
		describeContainers(d, pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	}
	d.heading(0, "Containers")
	describeContainers(d, pod.Spec.Containers, pod.Status.ContainerStatuses)
	if len(pod.Spec.EphemeralContainers) > 0 {
		d.heading(0, "Ephemeral Containers")
		ephemeral := make([]v1.Container, 0, len(pod.Spec.EphemeralContainers))
		for _, ec := range pod.Spec.EphemeralContainers {
			ephemeral = append(ephemeral, v1.Container(ec.EphemeralContainerCommon))
		}
		describeContainers(d, ephemeral, pod.Status.EphemeralContainerStatuses)
	}
	describeConditions(d, pod.Status.Conditions)
	describeVolumes(d, pod.Spec.Volumes)
	d.line(0, "QoS Class", "%s", pod.Status.QOSClass)
	describeEvents(d, detail.Events, now)
	return d.tw.Flush()
}

func describeContainers(d describer, specs []v1.Container, statuses []v1.ContainerStatus) {
	byName := map[string]v1.ContainerStatus{}
	for _, st := range statuses {
		byName[st.Name] = st
	}
	for _, c := range specs {
		st, known := byName[c.Name]
		d.heading(1, c.Name)
		if known {
			d.line(2, "Container ID", "%s", st.ContainerID)
		}
		d.line(2, "Image", "%s", c.Image)
		if known {
			d.line(2, "Image ID", "%s", st.ImageID)
		}
		describePorts(d, c.Ports)
		describeList(d, "Command", c.Command)
		describeList(d, "Args", c.Args)
		if known {
			describeState(d, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				describeState(d, "Last State", st.LastTerminationState)
			}
			d.line(2, "Ready", "%s", titleBool(st.Ready))
			d.line(2, "Restart Count", "%d", st.RestartCount)
		}
		describeProbe(d, "Liveness", c.LivenessProbe)
		describeProbe(d, "Readiness", c.ReadinessProbe)
		describeProbe(d, "Startup", c.StartupProbe)
		describeEnv(d, c.Env)
		describeMounts(d, c.VolumeMounts)
	}
}

func describePorts(d describer, ports []v1.ContainerPort) {
	if len(ports) == 0 {
		d.line(2, "Port", "<none>")
		return
	}
	var ps, hs []string
	for _, p := range ports {
		ps = append(ps, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
		hs = append(hs, fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
	}
	d.line(2, "Port", "%s", strings.Join(ps, ", "))
	d.line(2, "Host Port", "%s", strings.Join(hs, ", "))
}

func describeList(d describer, key string, items []string) {
	if len(items) == 0 {
		return
	}
	d.heading(2, key)
	for _, it := range items {
		fmt.Fprintf(d.tw, "      %s\n", it)
	}
}

func describeState(d describer, key string, s v1.ContainerState) {
	switch {
	case s.Running != nil:
		d.line(2, key, "Running")
		d.line(3, "Started", "%s", s.Running.StartedAt.Format(time.RFC1123Z))
	case s.Waiting != nil:
		d.line(2, key, "Waiting")
		d.line(3, "Reason", "%s", s.Waiting.Reason)
		if s.Waiting.Message != "" {
			d.line(3, "Message", "%s", s.Waiting.Message)
		}
	case s.Terminated != nil:
		t := s.Terminated
		d.line(2, key, "Terminated")
		d.line(3, "Reason", "%s", t.Reason)
		if t.Message != "" {
			d.line(3, "Message", "%s", t.Message)
		}
		d.line(3, "Exit Code", "%d", t.ExitCode)
		d.line(3, "Started", "%s", t.StartedAt.Format(time.RFC1123Z))
		d.line(3, "Finished", "%s", t.FinishedAt.Format(time.RFC1123Z))
	default:
		d.line(2, key, "Unknown")
	}
}

// describeProbe prints a probe like kubectl: handler and timing.
func describeProbe(d describer, kind string, p *v1.Probe) {
	if p == nil {
		return
	}
	var handler string
	switch {
	case p.Exec != nil:
		handler = "exec " + fmt.Sprint(p.Exec.Command)
	case p.HTTPGet != nil:
		handler = fmt.Sprintf("http-get %s://%s:%s%s", strings.ToLower(string(p.HTTPGet.Scheme)), p.HTTPGet.Host, p.HTTPGet.Port.String(), p.HTTPGet.Path)
	case p.TCPSocket != nil:
		handler = fmt.Sprintf("tcp-socket %s:%s", p.TCPSocket.Host, p.TCPSocket.Port.String())
	case p.GRPC != nil:
		handler = fmt.Sprintf("grpc <pod>:%d", p.GRPC.Port)
	}
	d.line(2, kind, "%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d", handler,
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
}

func describeEnv(d describer, env []v1.EnvVar) {
	if len(env) == 0 {
		d.line(2, "Environment", "<none>")
		return
	}
	d.heading(2, "Environment")
	for _, e := range env {
		value := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.ConfigMapKeyRef != nil:
				value = fmt.Sprintf("<set to the key '%s' of config map '%s'>", src.ConfigMapKeyRef.Key, src.ConfigMapKeyRef.Name)
			case src.SecretKeyRef != nil:
				value = fmt.Sprintf("<set to the key '%s' in secret '%s'>", src.SecretKeyRef.Key, src.SecretKeyRef.Name)
			case src.FieldRef != nil:
				value = fmt.Sprintf("(%s:%s)", src.FieldRef.APIVersion, src.FieldRef.FieldPath)
			case src.ResourceFieldRef != nil:
				value = fmt.Sprintf("%s (%s)", src.ResourceFieldRef.Resource, src.ResourceFieldRef.ContainerName)
			}
		}
		d.line(3, e.Name, "%s", value)
	}
}

func describeMounts(d describer, mounts []v1.VolumeMount) {
	if len(mounts) == 0 {
		d.line(2, "Mounts", "<none>")
		return
	}
	d.heading(2, "Mounts")
	for _, m := range mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		sub := ""
		if m.SubPath != "" {
			sub = ",path=\"" + m.SubPath + "\""
		}
		fmt.Fprintf(d.tw, "      %s from %s (%s%s)\n", m.MountPath, m.Name, mode, sub)
	}
}

func describeConditions(d describer, conds []v1.PodCondition) {
	d.heading(0, "Conditions")
	fmt.Fprintf(d.tw, "  Type\tStatus\n")
	for _, c := range conds {
		fmt.Fprintf(d.tw, "  %s\t%s\n", c.Type, c.Status)
	}
}

func describeVolumes(d describer, vols []v1.Volume) {
	if len(vols) == 0 {
		d.line(0, "Volumes", "<none>")
		return
	}
	d.heading(0, "Volumes")
	for _, v := range vols {
		d.heading(1, v.Name)
		d.line(2, "Type", "%s", volumeKind(v.VolumeSource))
	}
}

// volumeKind names a volume's source and its main setting.
func volumeKind(src v1.VolumeSource) string {
	switch {
	case src.EmptyDir != nil:
		if src.EmptyDir.Medium == v1.StorageMediumMemory {
			return "EmptyDir (tmpfs, a temporary directory that shares a pod's lifetime)"
		}
		return "EmptyDir (a temporary directory that shares a pod's lifetime)"
	case src.HostPath != nil:
		return "HostPath (bare host directory volume) " + src.HostPath.Path
	case src.ConfigMap != nil:
		return "ConfigMap (a volume populated by a ConfigMap) " + src.ConfigMap.Name
	case src.Secret != nil:
		return "Secret (a volume populated by a Secret) " + src.Secret.SecretName
	case src.DownwardAPI != nil:
		return "DownwardAPI (a volume populated by information about the pod)"
	case src.Projected != nil:
		return "Projected (a volume that contains injected data from multiple sources)"
	}
	return "<unknown>"
}

func describeEvents(d describer, events []agentapi.Event, now time.Time) {
	if len(events) == 0 {
		d.line(0, "Events", "<none>")
		return
	}
	d.heading(0, "Events")
	fmt.Fprintf(d.tw, "  Type\tReason\tAge\tFrom\tMessage\n")
	fmt.Fprintf(d.tw, "  ----\t------\t----\t----\t-------\n")
	for _, e := range events {
		when := age(e.LastTime, now)
		if e.Count > 1 {
			when = fmt.Sprintf("%s (x%d over %s)", when, e.Count, age(e.FirstTime, now))
		}
		fmt.Fprintf(d.tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, when, "berth", e.Message)
	}
}

func titleBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// joinMap prints k=v pairs sorted by key, or <none>.
func joinMap(m map[string]string, sep string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, sep)
}
