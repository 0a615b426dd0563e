package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// Watchdog timing: how often it looks, and how long a problem must last
// before it reports it (kubelet calls itself unhealthy after 3 minutes
// without a completed relist).
const (
	watchdogInterval = 20 * time.Second
	watchdogGrace    = 2 * time.Minute
)

// watchdog checks, until stop is called, that kubelet runs, berth answers
// and the node is Ready. kubelet's exit fails t at once (kubelet 1.37
// crashed on a network usage without a default interface, and the run
// then idled until its timeout) and cancels the returned context, which
// ends the run; the first time a problem lasts watchdogGrace it says so, also
// in the summary, and dumps berth's and kubelet's goroutine stacks: a run
// that hangs can then be read at the moment it hung, not after its
// timeout.
func (c *cluster) watchdog(t *testing.T) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(watchdogInterval)
		defer tick.Stop()
		var since time.Time
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if died := c.kubelet.Died(); died != "" {
				t.Errorf("watchdog: %s", died)
				harness.Summarize("%s: watchdog at %s: %s", t.Name(), time.Now().UTC().Format("15:04:05"), died)
				c.berth.DumpStacks()
				cancel()
				return
			}
			problem := c.health()
			switch {
			case problem == "":
				since = time.Time{}
				continue
			case since.IsZero():
				since = time.Now()
			}
			if time.Since(since) >= watchdogGrace {
				t.Logf("watchdog: %s (for %v); dumping berth's and kubelet's stacks", problem, time.Since(since).Round(time.Second))
				harness.Summarize("%s: watchdog at %s: %s", t.Name(), time.Now().UTC().Format("15:04:05"), problem)
				c.dumpStacks()
				return
			}
		}
	}()
	return ctx, func() { close(done); <-exited; cancel() }
}

// health is "" when berth lists its containers within 15 seconds and the
// node is Ready, else what is wrong.
func (c *cluster) health() string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.berth.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		return fmt.Sprintf("berth did not answer ListContainers: %v", err)
	}
	out, err := c.try("get", "node", "localhost", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
	if err != nil {
		return err.Error()
	}
	if !strings.HasPrefix(out, "True") {
		return "node localhost is not Ready: " + out
	}
	return ""
}
