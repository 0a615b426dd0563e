package agent

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// Reconnect delays of the event subscription: it doubles from the first
// to the last while the runtime refuses it.
const (
	eventRetryFirst = 200 * time.Millisecond
	eventRetryMax   = 5 * time.Second
)

// eventlessRelist is how often the agent relists when the runtime has no
// GetContainerEvents (containerd before 1.7): kubelet's generic PLEG
// period.
const eventlessRelist = time.Second

// watchEvents keeps a GetContainerEvents subscription open, and wakes the
// worker of the pod each event is about. When the stream breaks it
// resubscribes and relists, because events may have been lost meanwhile
// (the runtime drops a subscriber that falls behind); a stream that broke
// before delivering anything backs off like a refused subscription. A
// runtime without the RPC gets relists every eventlessRelist instead.
func (a *Agent) watchEvents(ctx context.Context) {
	delay := eventRetryFirst
	for ctx.Err() == nil {
		stream, err := a.deps.runtime.ContainerEvents(ctx)
		if err == nil {
			a.relistNow()
			var delivered bool
			delivered, err = a.consumeEvents(stream)
			if delivered {
				delay = eventRetryFirst
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			period := min(a.cfg.RelistPeriod, eventlessRelist)
			a.log.Info("the runtime does not stream container events; relisting instead", "period", period)
			a.relistEvery(ctx, period)
			return
		}
		a.log.Debug("container events: stream ended; resubscribing", "error", err, "retry", delay)
		if !sleepCtx(ctx, a.deps.clock, delay) {
			return
		}
		delay = min(2*delay, eventRetryMax)
	}
}

// consumeEvents dispatches a stream's events until it breaks; it reports
// whether any arrived and why the stream ended.
func (a *Agent) consumeEvents(stream criclient.EventStream) (bool, error) {
	delivered := false
	for {
		ev, err := stream.Recv()
		if err != nil {
			return delivered, err
		}
		delivered = true
		a.dispatchEvent(ev)
	}
}

// relistEvery asks for a relist every period until ctx ends.
func (a *Agent) relistEvery(ctx context.Context, period time.Duration) {
	for sleepCtx(ctx, a.deps.clock, period) {
		a.relistNow()
	}
}

// dispatchEvent wakes the worker of the pod an event belongs to; events of
// sandboxes and containers the agent does not own are ignored.
func (a *Agent) dispatchEvent(ev *runtimeapi.ContainerEventResponse) {
	labels := ev.GetPodSandboxStatus().GetLabels()
	if labels == nil {
		for _, st := range ev.GetContainersStatuses() {
			if st.GetId() == ev.GetContainerId() {
				labels = st.GetLabels()
			}
		}
	}
	uid := labels[podspec.LabelPodUID]
	if uid == "" {
		return
	}
	if w := a.worker(uid); w != nil {
		w.trigger()
		return
	}
	if labels[podspec.LabelAgent] == "true" {
		a.relistNow() // a sandbox of ours the agent has no worker for
	}
}

// relistLoop lists the runtime's sandboxes every RelistPeriod and when
// asked (relistNow): it is the safety net under the event stream.
func (a *Agent) relistLoop(ctx context.Context) {
	ticker := a.deps.clock.NewTicker(a.cfg.RelistPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-a.relistRequests:
		}
		if err := a.relist(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("relist", "error", err)
		}
	}
}

// relistNow asks the relist loop for a relist soon; requests coalesce.
func (a *Agent) relistNow() {
	select {
	case a.relistRequests <- struct{}{}:
	default:
	}
}

// relist wakes every worker and adopts the agent's sandboxes that have no
// worker (created by a previous agent whose pod this one does not know):
// they are recovered from their annotations, or removed.
func (a *Agent) relist(ctx context.Context) error {
	sandboxes, err := a.deps.runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelAgent: "true"})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, sb := range sandboxes {
		uid := sb.GetLabels()[podspec.LabelPodUID]
		if uid == "" || seen[uid] {
			continue
		}
		seen[uid] = true
		if a.worker(uid) == nil {
			a.adopt(ctx, uid)
		}
	}
	for _, w := range a.workerList() {
		w.trigger()
	}
	return nil
}

// sleepCtx waits d on clk; it reports false when ctx ended first.
func sleepCtx(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
