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

// Watchdog timing: how often it looks, how long a problem must last
// before it reports it (kubelet calls itself unhealthy after 3 minutes
// without a completed relist), and how long one look may take.
const (
	watchdogInterval = 20 * time.Second
	watchdogGrace    = 2 * time.Minute
	watchdogTimeout  = 15 * time.Second
)

// watchdog checks, until stop is called, that kubelet runs, berth answers
// and the node is Ready. kubelet's exit fails t within watchdogInterval
// (kubelet 1.37 crashed on a network usage without a default interface,
// and the run then idled until its timeout) and cancels the returned
// context, which ends the run. A problem that lasts watchdogGrace is
// reported, also in the summary, with berth's and kubelet's goroutine
// stacks dumped at that moment; it is reported again only after the
// cluster was healthy in between.
func (c *cluster) watchdog(t *testing.T) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(watchdogInterval)
		defer tick.Stop()
		var since time.Time
		reported := false
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
				since, reported = time.Time{}, false
			case since.IsZero():
				since = time.Now()
			case !reported && time.Since(since) >= watchdogGrace:
				reported = true
				t.Logf("watchdog: %s (for %v); dumping berth's and kubelet's stacks", problem, time.Since(since).Round(time.Second))
				harness.Summarize("%s: watchdog at %s: %s", t.Name(), time.Now().UTC().Format("15:04:05"), problem)
				c.dumpStacks()
			}
		}
	}()
	return ctx, func() { close(done); <-exited; cancel() }
}

// health is "" when berth lists its containers and the node is Ready,
// each within watchdogTimeout, else what is wrong.
func (c *cluster) health() string {
	ctx, cancel := context.WithTimeout(context.Background(), watchdogTimeout)
	defer cancel()
	if _, err := c.berth.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		return fmt.Sprintf("berth did not answer ListContainers: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), watchdogTimeout)
	defer cancel()
	out, err := c.command(ctx, "get", "node", "localhost", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`).Output()
	if err != nil {
		return fmt.Sprintf("kubectl get node localhost: %v", err)
	}
	if s := strings.TrimSpace(string(out)); !strings.HasPrefix(s, "True") {
		return "node localhost is not Ready: " + s
	}
	return ""
}
