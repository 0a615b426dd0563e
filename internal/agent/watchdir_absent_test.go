package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// keptStatefulSet is dbStatefulSet with one replica and whenDeleted
// Delete: its claim goes with it when 'berth delete' deletes it.
var keptStatefulSet = strings.Replace(dbStatefulSet, "replicas: 3", "replicas: 1\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}", 1)

// startDirAgentOnClock runs an agent on clk with its root under state.
func startDirAgentOnClock(t *testing.T, rt *criclienttest.Runtime, state string, clk *clocktesting.FakeClock) *testAgent {
	t.Helper()
	a, vols := newTestAgent(t, rt, state, clk)
	return runTestAgent(t, a, vols)
}

// watchedSet watches dir, holding db.yaml (keptStatefulSet) and the pod
// static.yaml, waits for db-0 and the pod to run, and writes a row into
// db-0's claim.
func watchedSet(t *testing.T, a *testAgent, dir string) (setUID, podUID string) {
	t.Helper()
	writeDirFile(t, dir, "db.yaml", keptStatefulSet)
	writeDirFile(t, dir, "static.yaml", staticPodYAML("static"))
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-0 ready", func() bool { return readyCount(a.ownedPods("StatefulSet")) == 1 })
	if err := os.WriteFile(a.claimFile(t, "data-db-0"), []byte("row 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	return string(a.statefulSet(t).StatefulSet.UID), string(a.pod(t, "static").UID)
}

// gone lists what the scans of dir found missing and not yet deleted.
func (a *testAgent) missing(dir string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.Agent.gone[dir]; g != nil {
		return len(g.since)
	}
	return 0
}

// hasWorkload reports whether the agent holds the workload of uid, even
// one being deleted.
func (a *testAgent) hasWorkload(uid string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, found := a.workloads[uid]
	return found
}

// survived fails unless the set and the pod are the ones of uids, and
// db-0's claim holds its row.
func (a *testAgent) survived(t *testing.T, when, setUID, podUID string) {
	t.Helper()
	if d, err := a.DescribeWorkload(agentapi.ResourceStatefulSet, "default", "db"); err != nil || string(d.StatefulSet.UID) != setUID || d.StatefulSet.DeletionTimestamp != nil {
		t.Errorf("%s: StatefulSet db: %v; want the same set, not deleted", when, err)
	}
	if d, err := a.DescribePod("default", "static"); err != nil || string(d.Pod.UID) != podUID || d.Pod.DeletionTimestamp != nil {
		t.Errorf("%s: pod static: %v; want the same pod, not deleted", when, err)
	}
	if row, err := os.ReadFile(a.claimFile(t, "data-db-0")); err != nil || string(row) != "row 1" {
		t.Errorf("%s: db-0's claim holds %q, %v; want its row", when, row, err)
	}
}

// A file gone for one scan deletes nothing: its objects go only when a
// later scan, absenceConfirmAfter or more after the first that missed
// them, still misses them (the agent asks for that scan itself). A
// StatefulSet so deleted keeps its claims although whenDeleted is Delete,
// and the set applied again adopts them, data and all.
func TestWatchedDirectoryDeletesOnlyWhatTwoScansMiss(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startDirAgentOnClock(t, criclienttest.New(), t.TempDir(), clk)
	dir := manifestDir(t, "other")
	setUID, podUID := watchedSet(t, a, dir)

	// Renamed away and back within the gap: nothing goes.
	for _, name := range []string{"db.yaml", "static.yaml"} {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".away")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the scan that misses db and static", func() bool { return a.missing(dir) == 2 })
	clk.Step(absenceConfirmAfter - time.Millisecond)
	a.rescanned(t, dir, "marker1")
	a.survived(t, "missing for less than the gap", setUID, podUID)
	for _, name := range []string{"db.yaml", "static.yaml"} {
		if err := os.Rename(filepath.Join(dir, name+".away"), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the scan that finds them back", func() bool { return a.missing(dir) == 0 })
	clk.Step(2 * absenceConfirmAfter)
	a.rescanned(t, dir, "marker2")
	a.survived(t, "back within the gap", setUID, podUID)

	// Gone for good: the recheck the agent asks for deletes them.
	for _, name := range []string{"db.yaml", "static.yaml"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the scan that misses db and static", func() bool { return a.missing(dir) == 2 })
	a.survived(t, "missed by one scan", setUID, podUID)
	waitFor(t, "the recheck's wait", clk.HasWaiters)
	clk.Step(absenceConfirmAfter)
	waitFor(t, "the set, its pod and the static pod gone", func() bool {
		clk.Step(100 * time.Millisecond) // through the pods' terminations
		_, podErr := a.DescribePod("default", "static")
		return !a.hasWorkload(setUID) && podErr != nil && len(a.ownedPods("StatefulSet")) == 0
	})
	if row, err := os.ReadFile(a.claimFile(t, "data-db-0")); err != nil || string(row) != "row 1" {
		t.Fatalf("the claim of a set a scan deleted: %q, %v; want it kept with its row (whenDeleted Delete notwithstanding)", row, err)
	}

	writeDirFile(t, dir, "db.yaml", keptStatefulSet)
	waitFor(t, "db-0 back", func() bool { return readyCount(a.ownedPods("StatefulSet")) == 1 })
	if row, err := os.ReadFile(a.claimFile(t, "data-db-0")); err != nil || string(row) != "row 1" {
		t.Errorf("db-0's claim under the set applied again: %q, %v; want its row", row, err)
	}
	if c, _, _ := a.claims.store.Get("default", "data-db-0"); c.Owner != string(a.statefulSet(t).StatefulSet.UID) {
		t.Errorf("claim owner %q; want the new set, which adopted it", c.Owner)
	}
}

// A scan that finds the directory empty, or cannot read it, deletes
// nothing however long it lasts, and a Warning event names the directory;
// so does the first scan of a restarted agent whose directory is empty
// (a mount not there yet).
func TestWatchedDirectoryEmptyOrUnreadableDeletesNothing(t *testing.T) {
	rt := criclienttest.New()
	state := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	first := startDirAgentOnClock(t, rt, state, clk)
	dir := manifestDir(t)
	setUID, podUID := watchedSet(t, first, dir)
	away := t.TempDir()
	moveAll := func(from, to string) {
		t.Helper()
		for _, name := range []string{"db.yaml", "static.yaml"} {
			if err := os.Rename(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	moveAll(dir, away)
	waitFor(t, "the WatchedDirectoryEmpty event", func() bool { return first.nodeWarning(reasonWatchedDirectoryEmpty, dir) })
	clk.Step(3 * absenceConfirmAfter)
	first.survived(t, "an empty directory", setUID, podUID)

	if err := os.Chmod(dir, 0o777); err != nil { // refused by CheckTrustedDir: unreadable
		t.Fatal(err)
	}
	writeDirFile(t, dir, "x.yaml", staticPodYAML("x"))
	waitFor(t, "the WatchedDirectoryUnreadable event", func() bool { return first.nodeWarning(reasonWatchedDirectoryUnreadable, dir) })
	clk.Step(3 * absenceConfirmAfter)
	first.survived(t, "an unreadable directory", setUID, podUID)
	if err := os.Remove(filepath.Join(dir, "x.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	first.stop()

	second := startDirAgentOnClock(t, rt, state, clk)
	waitFor(t, "the restarted agent's WatchedDirectoryEmpty event", func() bool { return second.nodeWarning(reasonWatchedDirectoryEmpty, dir) })
	clk.Step(3 * absenceConfirmAfter)
	second.survived(t, "an empty directory at start", setUID, podUID)
	moveAll(away, dir)
	second.rescanned(t, dir, "marker")
	second.survived(t, "the files back", setUID, podUID)
}

// nodeWarning reports whether the node has a Warning event of reason
// whose message names dir.
func (a *testAgent) nodeWarning(reason, dir string) bool {
	for _, e := range a.pressure.events.list() {
		if e.Type == agentapi.EventWarning && e.Reason == reason && strings.Contains(e.Message, dir) {
			return true
		}
	}
	return false
}

// A multi-document file read half written keeps the objects of its
// missing documents: the file parses, with fewer objects (cut at a
// document's end, before or after its "---", or inside the leading
// comment of the next one, as helm's "# Source:" line), so only the
// two-scan rule keeps them. The file written whole keeps them as they
// were.
func TestWatchedDirectoryHalfWrittenFileDeletesNothing(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startDirAgentOnClock(t, criclienttest.New(), t.TempDir(), clk)
	dir := manifestDir(t)
	setUID, podUID := watchedSet(t, a, dir)
	first := staticPodYAML("static")
	whole := first + "---\n# Source: db/templates/statefulset.yaml\n" + keptStatefulSet
	if err := os.Remove(filepath.Join(dir, "db.yaml")); err != nil {
		t.Fatal(err)
	}
	writeDirFile(t, dir, "static.yaml", whole)
	a.rescanned(t, dir, "marker0")
	for i, half := range []string{
		first,                                 // cut at the first document's end
		first + "---\n",                       // cut after its separator
		whole[:len(first)+len("---\n# Sour")], // cut inside the second document's comment
	} {
		writeDirFile(t, dir, "static.yaml", half)
		a.rescanned(t, dir, "marker-half"+string(rune('a'+i)))
		a.survived(t, "a file half written", setUID, podUID)
		if a.missing(dir) != 1 { // else the case does not test the two-scan rule
			t.Fatalf("half %d (...%q): %d objects noted missing; want the set (the file parses, without it)", i, half[max(0, len(half)-20):], a.missing(dir))
		}
		writeDirFile(t, dir, "static.yaml", whole)
		waitFor(t, "the whole file read", func() bool { return a.missing(dir) == 0 })
		clk.Step(2 * absenceConfirmAfter)
		a.rescanned(t, dir, "marker-whole"+string(rune('a'+i)))
		a.survived(t, "the file written whole", setUID, podUID)
	}
}

// A StatefulSet applied again while the copy deleted before it is still
// terminating adopts that copy's claims: the old copy's whenDeleted
// Delete does not take them, and the new set's pod finds its data.
func TestStatefulSetAppliedAgainWhileTerminatingAdoptsItsClaims(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, keptStatefulSet)
	waitFor(t, "db-0 ready", func() bool { return readyCount(a.ownedPods("StatefulSet")) == 1 })
	if err := os.WriteFile(a.claimFile(t, "data-db-0"), []byte("row 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock() // the old copy cannot finish before the new one is there
	old := a.liveWorkloadLocked("StatefulSet", "default", "db")
	if _, err := a.deleteWorkloadLocked(old, nil); err != nil {
		a.mu.Unlock()
		t.Fatal(err)
	}
	b := bundle(t, keptStatefulSet)
	b.SetDefaults()
	_, err := a.applyObjectsLocked(b, "")
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new db-0 ready", func() bool {
		p, ok := a.ownedPods("StatefulSet")["db-0"]
		return ok && ready(p) && p.OwnerReferences[0].UID != old.sts.UID
	})
	if row, err := os.ReadFile(a.claimFile(t, "data-db-0")); err != nil || string(row) != "row 1" {
		t.Fatalf("db-0's claim under the new set: %q, %v; want the old copy's row", row, err)
	}
	newUID := string(a.statefulSet(t).StatefulSet.UID)
	waitFor(t, "the old copy forgotten, its claim the new set's", func() bool {
		c, _, _ := a.claims.store.Get("default", "data-db-0")
		return !a.hasWorkload(old.uid()) && c.Owner == newUID
	})
	// 'berth delete' of the new set releases the claim it adopted.
	if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the claim released with the set", func() bool { _, found := a.claimList(t)["data-db-0"]; return !found })
}
