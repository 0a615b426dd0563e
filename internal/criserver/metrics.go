package criserver

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// ListMetricDescriptors describes every metric ListPodSandboxMetrics may
// return (metricTable). A metric the host cannot give (huge pages without
// the hugetlb controller, PSI without a unified hierarchy) is described
// and has no values.
func (s *Server) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: metricDescriptors}, nil
}

// ListPodSandboxMetrics samples every sandbox: pod-level network metrics and
// per-container cgroup, process, configuration and filesystem metrics.
func (s *Server) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.PodSandboxMetrics{}
	for _, sb := range s.sandboxes.Sandboxes() {
		st, err := src.SandboxMetrics(sb.ID)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, podMetrics(&st))
	}
	return &runtimeapi.ListPodSandboxMetricsResponse{PodMetrics: out}, nil
}

// podMetrics turns a sandbox's sample into its metrics, in metricTable
// order: the pod-level ones, then each container's.
func podMetrics(st *pod.SandboxStats) *runtimeapi.PodSandboxMetrics {
	pm := &runtimeapi.PodSandboxMetrics{PodSandboxId: st.Sandbox.ID}
	podLabels := sandboxLabelValues(st)
	for i := range metricTable {
		if d := &metricTable[i]; d.pod != nil {
			pm.Metrics = d.appendMetrics(pm.Metrics, podLabels, d.pod(st))
		}
	}
	for i := range st.Containers {
		cs := &st.Containers[i]
		labels := containerLabelValues(st, cs)
		cm := &runtimeapi.ContainerMetrics{ContainerId: cs.Container.ID}
		for j := range metricTable {
			if d := &metricTable[j]; d.container != nil {
				cm.Metrics = d.appendMetrics(cm.Metrics, labels, d.container(cs))
			}
		}
		pm.ContainerMetrics = append(pm.ContainerMetrics, cm)
	}
	return pm
}

// appendMetrics appends a metric per point, its label values the common
// ones then the point's own. Timestamps are 0: the values are live.
func (d *metricDef) appendMetrics(out []*runtimeapi.Metric, common []string, points []point) []*runtimeapi.Metric {
	for _, p := range points {
		labels := make([]string, 0, len(common)+len(p.labels))
		labels = append(append(labels, common...), p.labels...)
		out = append(out, &runtimeapi.Metric{Name: d.name, MetricType: d.typ, LabelValues: labels, Value: u64(p.value)})
	}
	return out
}

// sandboxLabelValues are the common labels of pod-level metrics: the
// container label is POD, as for cAdvisor's pause container.
func sandboxLabelValues(st *pod.SandboxStats) []string {
	sb := &st.Sandbox
	md := sb.Config.GetMetadata()
	return []string{"POD", sb.ID, "", sb.Name, md.GetNamespace(), md.GetName()}
}

// containerLabelValues are the common labels of a container's metrics.
func containerLabelValues(st *pod.SandboxStats, cs *pod.ContainerStats) []string {
	c := &cs.Container
	md := st.Sandbox.Config.GetMetadata()
	return []string{c.Config.GetMetadata().GetName(), c.ID, c.ImageName, c.Name, md.GetNamespace(), md.GetName()}
}
