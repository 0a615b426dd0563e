package agent

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const crashingPod = `
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// With maxContainerRestartPeriod 2 s the crash back-off of a container
// that keeps crashing stays at 2 s, below kubelet's first delay of 10 s:
// each sync after a crash waits 2 s, and the restart comes once the (fake)
// clock has moved that far.
func TestCrashBackoffCappedByMaxContainerRestartPeriod(t *testing.T) {
	rt := criclienttest.New()
	w := newSoloWorker(t, rt, crashingPod)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w.deps.clock = clk
	rt.SetClock(clk.Now) // exits are stamped on the fake clock too
	w.deps.crashBackoff = backoff.New(backoff.Config{}.CrashLoop(2 * time.Second))
	w.syncOnce(t)
	for crash := 1; crash <= 5; crash++ {
		if err := rt.Exit("app", 1); err != nil {
			t.Fatal(err)
		}
		next, _ := w.sync(t.Context())
		calls, _ := w.syncOnce(t) // the same moment: still nothing, or the first restart
		if crash == 1 {
			if next != 0 && next > time.Second {
				t.Fatalf("crash 1: held %v; the first restart is not held back", next)
			}
			continue
		}
		if next != 2*time.Second || len(calls) != 0 {
			t.Fatalf("crash %d: sync again in %v, calls %q; want a wait of 2s and nothing started", crash, next, calls)
		}
		if st := w.status.ContainerStatuses[0]; st.State.Waiting == nil || !strings.Contains(st.State.Waiting.Message, "back-off 2s") {
			t.Fatalf("crash %d: status %+v; want CrashLoopBackOff, back-off 2s", crash, st.State)
		}
		clk.Step(next)
		if calls, _ := w.syncOnce(t); !strings.Contains(strings.Join(calls, ","), "start app") {
			t.Fatalf("crash %d: after 2s calls %q; want app restarted", crash, calls)
		}
	}
}
