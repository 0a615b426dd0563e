package agent

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// setDeleting reports whether the agent holds the workload of uid, being
// deleted.
func (a *testAgent) setDeleting(uid string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.workloads[uid]
	return o != nil && o.meta().DeletionTimestamp != nil
}

// 'berth delete -f DIR' (Unwatch) releases, as whenDeleted Delete says,
// the claims a scan of DIR kept when it deleted their StatefulSet: those
// of a set gone already, and those of a set still terminating.
func TestUnwatchReleasesTheClaimsAScanKept(t *testing.T) {
	for _, terminating := range []bool{false, true} {
		name := map[bool]string{false: "set gone", true: "set terminating"}[terminating]
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			rt := criclienttest.New()
			a := startDirAgentOnClock(t, rt, t.TempDir(), clk)
			dir := manifestDir(t)
			setUID, _ := watchedSet(t, a, dir)
			hold := make(chan struct{})
			release := sync.OnceFunc(func() { close(hold) })
			t.Cleanup(release)
			if terminating {
				rt.HoldStop("app", hold) // db-0's container does not stop: the set stays terminating
			}
			if err := os.Remove(filepath.Join(dir, "db.yaml")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the scan that misses db", func() bool { return a.missing(dir) == 1 })
			waitFor(t, "the recheck's wait", clk.HasWaiters)
			clk.Step(absenceConfirmAfter)
			if terminating {
				waitFor(t, "the set deleted by the recheck", func() bool { return a.setDeleting(setUID) })
			} else {
				waitFor(t, "the set deleted by the recheck, and gone", func() bool {
					clk.Step(100 * time.Millisecond) // through its pod's termination
					return !a.hasWorkload(setUID)
				})
			}
			if row, err := os.ReadFile(a.claimFile(t, "data-db-0")); err != nil || string(row) != "row 1" {
				t.Fatalf("the claim of a set a scan deleted: %q, %v; want it kept with its row", row, err)
			}
			resp, err := a.Unwatch(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if !terminating && !hasResult(resp.Deleted, agentapi.KindPersistentVolumeClaim, "data-db-0") {
				t.Errorf("Unwatch deleted %+v; want the claim data-db-0 among them", resp.Deleted)
			}
			release()
			waitFor(t, "data-db-0 released", func() bool {
				clk.Step(100 * time.Millisecond)
				_, found := a.claimList(t)["data-db-0"]
				return !found && !a.hasWorkload(setUID)
			})
		})
	}
}

// hasResult reports whether results name the object of kind and name.
func hasResult(results []agentapi.ApplyResult, kind, name string) bool {
	for _, r := range results {
		if r.Kind == kind && r.Name == name {
			return true
		}
	}
	return false
}
