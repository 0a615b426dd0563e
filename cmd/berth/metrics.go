package main

import (
	"log/slog"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/criserver"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/pod"
	"github.com/berth-dev/berth/internal/profiling"
	"github.com/berth-dev/berth/internal/store"
)

// observers are the metrics' views for the pod service and the CRI edge;
// both stay nil (no observation at all) when metrics are off.
type observers struct {
	metrics *metrics.Metrics
	phases  pod.PhaseObserver
	rpcs    criserver.RPCObserver
}

func newObservers(cfg config.Config) observers {
	if cfg.Metrics.Address == "" {
		return observers{}
	}
	m := metrics.New()
	return observers{metrics: m, phases: m, rpcs: m}
}

// serveMetrics serves /metrics on [metrics] address when it is set; the
// returned func stops it.
func serveMetrics(cfg config.Config, obs observers, pods *pod.Service, quarantined quarantine, log *slog.Logger) (func(), error) {
	if obs.metrics == nil {
		return func() {}, nil
	}
	obs.metrics.TrackStates(func() map[string]int { return sandboxStates(pods) },
		func() map[string]int { return containerStates(pods) })
	obs.metrics.TrackQuarantined(quarantined.kinds)
	obs.metrics.TrackFsyncs(store.Fsyncs)
	srv, err := metrics.Listen(cfg.Metrics.Address, obs.metrics)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("metrics server", "error", err)
		}
	}()
	log.Info("serving metrics", "address", srv.Addr().String())
	return func() { _ = srv.Close() }, nil
}

func sandboxStates(pods *pod.Service) map[string]int {
	n := map[string]int{}
	for _, sb := range pods.Sandboxes() {
		n[string(sb.State)]++
	}
	return n
}

func containerStates(pods *pod.Service) map[string]int {
	n := map[string]int{}
	for _, c := range pods.Containers() {
		n[string(c.State)]++
	}
	return n
}

// serveProfiles serves Go's runtime profiles on [debug] pprof_socket when it
// is set; the returned func stops it.
func serveProfiles(cfg config.Config, log *slog.Logger) (func(), error) {
	if cfg.Debug.PprofSocket == "" {
		return func() {}, nil
	}
	srv, err := profiling.Listen(cfg.Debug.PprofSocket)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("pprof server", "error", err)
		}
	}()
	log.Info("serving runtime profiles", "socket", cfg.Debug.PprofSocket)
	return func() { _ = srv.Close() }, nil
}
