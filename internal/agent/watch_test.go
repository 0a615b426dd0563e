package agent

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// watchOnFakeClock runs only the agent's event watcher, on a fake clock:
// the watcher's timer is then the clock's only waiter, so a test knows
// when the watcher sleeps, and what it does when the clock steps.
func watchOnFakeClock(t *testing.T, rt *criclienttest.Runtime) (*Agent, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, _ := newTestAgent(t, rt, t.TempDir(), clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.watchEvents(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, clk
}

// relistAsked reports whether a relist was asked for since the last call.
func relistAsked(a *Agent) bool {
	select {
	case <-a.relistRequests:
		return true
	default:
		return false
	}
}

// A runtime without GetContainerEvents (containerd 1.6) answers the stream
// with Unimplemented: the agent subscribes once and relists every relist
// period (100 ms here, under eventlessRelist) instead of resubscribing.
func TestRuntimeWithoutEventsGetsRelists(t *testing.T) {
	rt := criclienttest.New()
	rt.SetEventsError(status.Error(codes.Unimplemented, "unknown method GetContainerEvents"))
	a, clk := watchOnFakeClock(t, rt)
	waitFor(t, "the watcher waits for its first relist period", clk.HasWaiters)
	relistAsked(a) // the one that follows every subscription
	for i := range 3 {
		clk.Step(100*time.Millisecond - time.Nanosecond)
		if relistAsked(a) {
			t.Fatalf("relist %d asked for before the period ended", i+1)
		}
		clk.Step(time.Nanosecond)
		waitFor(t, "a relist after one period", func() bool { return relistAsked(a) })
		waitFor(t, "the watcher waits for the next period", clk.HasWaiters)
	}
	if subscribes, _ := rt.EventCalls(); subscribes != 1 {
		t.Errorf("subscribed %d times; want once", subscribes)
	}
}

// A stream that keeps breaking before delivering anything is retried after
// a delay that doubles from eventRetryFirst up to eventRetryMax.
func TestBrokenEventStreamBacksOff(t *testing.T) {
	rt := criclienttest.New()
	rt.SetEventsError(status.Error(codes.Unavailable, "connection reset"))
	_, clk := watchOnFakeClock(t, rt)
	subscribes := func() int { n, _ := rt.EventCalls(); return n }
	want := 1
	for _, delay := range []time.Duration{200, 400, 800, 1600, 3200, 5000, 5000} {
		delay *= time.Millisecond
		waitFor(t, "the watcher waits to resubscribe", clk.HasWaiters)
		clk.Step(delay - time.Nanosecond)
		if got := subscribes(); got != want {
			t.Fatalf("%d subscriptions before %v passed; want %d", got, delay, want)
		}
		clk.Step(time.Nanosecond)
		want++
		waitFor(t, "a resubscription after the delay", func() bool { return subscribes() == want })
	}
}
