// Package metrics owns berth's Prometheus metrics and the HTTP endpoint that
// serves them at /metrics, on the opt-in `[metrics] address`.
//
// It records what other packages report through small interfaces they
// declare themselves, so that none of them imports Prometheus:
//   - criserver's interceptor reports each unary CRI call (Observe):
//     berth_cri_request_duration_seconds{method, code};
//   - the pod service reports each step of a sandbox or container start
//     (ObservePhase): berth_start_phase_duration_seconds{op, phase};
//   - TrackStates counts sandboxes and containers by state at scrape time:
//     berth_sandboxes{state}, berth_containers{state};
//   - TrackQuarantined counts the records recovery quarantined at scrape
//     time: berth_quarantined_records{kind="sandbox|container"}.
//
// Rules: metrics live in a registry of their own (never Prometheus's global
// one), so tests and a second Metrics do not collide. Every method of a nil
// *Metrics is a no-op. Label values are bounded sets (method names, gRPC
// codes, fixed phase, state and record kind names): never ids or user input.
package metrics
