package probe

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxAttempts is how many times a worker retries a probe that could not be
// performed before it gives up on this period.
const maxAttempts = 3

// worker probes one container with one probe, periodically, until cancelled.
type worker struct {
	m         *Manager
	c         *container
	kind      Kind
	spec      *v1.Probe
	target    Target
	startedAt time.Time
	ctx       context.Context
	cancel    context.CancelFunc
	trigger   chan struct{}

	// Owned by the worker's goroutine.
	last   Result // result of the current run of equal results
	run    int    // length of that run
	onHold bool   // verdict reached; wait for a new container
}

func newWorker(m *Manager, c *container, k Kind, spec *v1.Probe, t Target, startedAt time.Time) *worker {
	ctx, cancel := context.WithCancel(m.ctx)
	return &worker{
		m: m, c: c, kind: k, spec: spec, target: t, startedAt: startedAt,
		ctx: ctx, cancel: cancel, trigger: make(chan struct{}, 1),
	}
}

// poke asks w to probe now rather than at its next tick; w may be nil.
func (w *worker) poke() {
	if w == nil {
		return
	}
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

func (w *worker) period() time.Duration { return seconds(w.spec.PeriodSeconds, 10, w.m.unit) }

// loop waits out the initial delay, then probes once per period (or when
// poked) until the worker is cancelled.
func (w *worker) loop() {
	defer w.m.wg.Done()
	defer w.cancel()
	if !w.waitForFirstProbe() {
		return
	}
	period := w.period()
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		w.tick()
		select {
		case <-w.ctx.Done():
			return
		case <-ticker.C:
		case <-w.trigger:
			ticker.Reset(period)
		}
	}
}

// waitForFirstProbe sleeps until initialDelaySeconds after the container
// started. A container already past it when a young manager adds it was most
// likely recovered after an agent restart: it waits a random part of a period
// instead, so that recovered probes do not all fire at once.
func (w *worker) waitForFirstProbe() bool {
	delay := seconds(w.spec.InitialDelaySeconds, 0, w.m.unit)
	wait := time.Until(w.startedAt.Add(delay))
	if period := w.period(); wait <= 0 && time.Since(w.m.created) < period {
		wait = rand.N(period) //nolint:gosec // G404: jitter that spreads first probes, not a secret
	}
	if wait <= 0 {
		return w.ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// tick probes once if the probe is due and applies the thresholds.
func (w *worker) tick() {
	if w.onHold || w.ctx.Err() != nil {
		return
	}
	// Liveness and readiness wait for the startup probe; startup stops once
	// it has succeeded.
	started := w.m.started(w.c)
	if (w.kind == Startup && started) || (w.kind != Startup && !started) {
		return
	}
	o := w.attempt()
	if o.result == Unknown || w.ctx.Err() != nil {
		return // the kubelet discards probes that could not be performed
	}
	if o.result == w.last {
		w.run++
	} else {
		w.last, w.run = o.result, 1
	}
	if w.run < w.threshold(o.result) {
		return
	}
	w.m.record(w, o)
	if w.kind == Startup || (w.kind == Liveness && o.result == Failure) {
		// The container is about to be killed, or has started: either way
		// this probe has nothing more to say about it.
		w.onHold, w.run = true, 0
	}
}

// threshold is how many results r in a row change the probe's verdict, with
// the API defaults (1 success, 3 failures) for unset fields.
func (w *worker) threshold(r Result) int {
	if r == Success {
		return int(max(w.spec.SuccessThreshold, 1))
	}
	if w.spec.FailureThreshold < 1 {
		return 3
	}
	return int(w.spec.FailureThreshold)
}

// attempt runs the probe, retrying one that could not be performed, and
// reports every attempt's final outcome to OnAttempt.
func (w *worker) attempt() outcome {
	var o outcome
	for i := 0; i < maxAttempts && w.ctx.Err() == nil; i++ {
		o = runProbe(w.ctx, w.spec, w.target, w.m.execer, w.m.unit)
		if o.result != Unknown {
			break
		}
	}
	if w.m.onAttempt != nil && w.ctx.Err() == nil {
		w.m.onAttempt(Attempt{
			PodUID: w.c.podUID, ContainerName: w.c.name, ContainerID: w.c.id, Kind: w.kind,
			Result: o.result, Warning: o.warning, Message: o.message, At: time.Now(),
		})
	}
	return o
}
