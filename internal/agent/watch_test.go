package agent

import (
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A runtime without GetContainerEvents (containerd 1.6) answers the stream
// with Unimplemented: the agent subscribes once and relists instead of
// resubscribing in a tight loop.
func TestRuntimeWithoutEventsGetsRelists(t *testing.T) {
	rt := criclienttest.New()
	rt.SetEventsError(status.Error(codes.Unimplemented, "unknown method GetContainerEvents"))
	startTestAgent(t, rt)
	time.Sleep(600 * time.Millisecond)
	subscribes, lists := rt.EventCalls()
	if subscribes != 1 {
		t.Errorf("subscribed %d times in 600ms, want once", subscribes)
	}
	if lists < 3 {
		t.Errorf("relisted %d times in 600ms (relist period 100ms), want at least 3", lists)
	}
}

// A stream that keeps breaking before delivering anything is retried with
// a growing delay, not at once.
func TestBrokenEventStreamBacksOff(t *testing.T) {
	rt := criclienttest.New()
	rt.SetEventsError(status.Error(codes.Unavailable, "connection reset"))
	startTestAgent(t, rt)
	time.Sleep(700 * time.Millisecond)
	// 200 ms, then 400 ms between attempts: at most 3 in 700 ms.
	if subscribes, _ := rt.EventCalls(); subscribes < 2 || subscribes > 3 {
		t.Errorf("subscribed %d times in 700ms, want 2 or 3 (200 ms, then 400 ms apart)", subscribes)
	}
}
