package criserver

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// Metric names, in cAdvisor's vocabulary where the value has its unit.
// CRI metric values are integers, so CPU time is in nanoseconds rather than
// cAdvisor's fractional seconds.
const (
	metricCPUNanos    = "container_cpu_usage_nanoseconds_total"
	metricWorkingSet  = "container_memory_working_set_bytes"
	metricMemoryUsage = "container_memory_usage_bytes"
	metricProcesses   = "container_processes"
	metricFsUsage     = "container_fs_usage_bytes"
	metricNetRxBytes  = "container_network_receive_bytes_total"
	metricNetTxBytes  = "container_network_transmit_bytes_total"
	metricNetRxErrors = "container_network_receive_errors_total"
	metricNetTxErrors = "container_network_transmit_errors_total"
	labelContainer    = "container"
	labelID           = "id"
	labelInterface    = "interface"
	labelNamespace    = "namespace"
	labelPod          = "pod"
)

// Label keys, sorted as the CRI asks.
var (
	containerLabelKeys = []string{labelContainer, labelID, labelNamespace, labelPod}
	podLabelKeys       = []string{labelInterface, labelNamespace, labelPod}
)

var metricDescriptors = []*runtimeapi.MetricDescriptor{
	{Name: metricCPUNanos, Help: "Cumulative CPU time consumed by the container, in nanoseconds.", LabelKeys: containerLabelKeys},
	{Name: metricWorkingSet, Help: "Memory usage minus inactive file pages, in bytes.", LabelKeys: containerLabelKeys},
	{Name: metricMemoryUsage, Help: "Memory usage including page cache, in bytes.", LabelKeys: containerLabelKeys},
	{Name: metricProcesses, Help: "Number of tasks in the container's cgroup.", LabelKeys: containerLabelKeys},
	{Name: metricFsUsage, Help: "Bytes allocated by the container's writable layer.", LabelKeys: containerLabelKeys},
	{Name: metricNetRxBytes, Help: "Cumulative bytes received by a pod interface.", LabelKeys: podLabelKeys},
	{Name: metricNetTxBytes, Help: "Cumulative bytes transmitted by a pod interface.", LabelKeys: podLabelKeys},
	{Name: metricNetRxErrors, Help: "Cumulative receive errors of a pod interface.", LabelKeys: podLabelKeys},
	{Name: metricNetTxErrors, Help: "Cumulative transmit errors of a pod interface.", LabelKeys: podLabelKeys},
}

// ListMetricDescriptors describes every metric ListPodSandboxMetrics returns.
func (s *Server) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: metricDescriptors}, nil
}

// ListPodSandboxMetrics samples every sandbox: pod-level network metrics and
// per-container CPU, memory, process and writable-layer metrics.
func (s *Server) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.PodSandboxMetrics{}
	for _, sb := range s.sandboxes.Sandboxes() {
		st, err := src.SandboxStats(sb.ID)
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

func podMetrics(st *pod.SandboxStats) *runtimeapi.PodSandboxMetrics {
	md := st.Sandbox.Config.GetMetadata()
	pm := &runtimeapi.PodSandboxMetrics{PodSandboxId: st.Sandbox.ID}
	for _, c := range st.Interfaces {
		if c.Name == "lo" {
			continue
		}
		labels := []string{c.Name, md.GetNamespace(), md.GetName()}
		pm.Metrics = append(pm.Metrics,
			metric(metricNetRxBytes, runtimeapi.MetricType_COUNTER, labels, c.RxBytes),
			metric(metricNetTxBytes, runtimeapi.MetricType_COUNTER, labels, c.TxBytes),
			metric(metricNetRxErrors, runtimeapi.MetricType_COUNTER, labels, c.RxErrors),
			metric(metricNetTxErrors, runtimeapi.MetricType_COUNTER, labels, c.TxErrors))
	}
	for i := range st.Containers {
		cs := &st.Containers[i]
		labels := []string{cs.Container.Config.GetMetadata().GetName(), cs.Container.ID, md.GetNamespace(), md.GetName()}
		cm := &runtimeapi.ContainerMetrics{ContainerId: cs.Container.ID}
		cm.Metrics = append(cm.Metrics, metric(metricFsUsage, runtimeapi.MetricType_GAUGE, labels, cs.WritableLayer.Bytes))
		if cs.HasUsage {
			cm.Metrics = append(cm.Metrics,
				metric(metricCPUNanos, runtimeapi.MetricType_COUNTER, labels, cs.Usage.CPUUsageNanos),
				metric(metricWorkingSet, runtimeapi.MetricType_GAUGE, labels, cs.Usage.MemoryWorkingSet),
				metric(metricMemoryUsage, runtimeapi.MetricType_GAUGE, labels, cs.Usage.MemoryUsage),
				metric(metricProcesses, runtimeapi.MetricType_GAUGE, labels, cs.Usage.Pids))
		}
		pm.ContainerMetrics = append(pm.ContainerMetrics, cm)
	}
	return pm
}

// metric is a live sample (timestamp 0, as the CRI asks for live values).
func metric(name string, typ runtimeapi.MetricType, labels []string, v uint64) *runtimeapi.Metric {
	return &runtimeapi.Metric{Name: name, MetricType: typ, LabelValues: labels, Value: u64(v)}
}
