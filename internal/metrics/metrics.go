package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
)

// Metrics holds berth's collectors and the registry they are served from.
type Metrics struct {
	registry *prometheus.Registry
	rpc      *prometheus.HistogramVec
	phases   *prometheus.HistogramVec
}

// latencyBuckets span 0.5 ms to about a minute, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

// New registers berth's collectors, with the Go runtime's and the process's,
// in a new registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth",
			Name:      "cri_request_duration_seconds",
			Help:      "Duration of unary CRI calls by method and gRPC status code.",
			Buckets:   latencyBuckets,
		}, []string{"method", "code"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth",
			Name:      "start_phase_duration_seconds",
			Help:      "Duration of each step of RunPodSandbox, CreateContainer and StartContainer, failed steps included.",
			Buckets:   latencyBuckets,
		}, []string{"op", "phase"}),
	}
	m.registry.MustRegister(m.rpc, m.phases,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe records one unary CRI call. method may be gRPC's full method
// ("/runtime.v1.RuntimeService/RunPodSandbox"); it is labelled by its last
// element ("RunPodSandbox").
func (m *Metrics) Observe(method string, code codes.Code, d time.Duration) {
	if m == nil {
		return
	}
	method = method[strings.LastIndexByte(method, '/')+1:]
	m.rpc.WithLabelValues(method, code.String()).Observe(d.Seconds())
}

// ObservePhase records one step (phase) of a start operation (op).
func (m *Metrics) ObservePhase(op, phase string, d time.Duration) {
	if m == nil {
		return
	}
	m.phases.WithLabelValues(op, phase).Observe(d.Seconds())
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
