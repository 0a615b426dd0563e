package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// absenceGap is the agent's absenceConfirmAfter (internal/agent): a
// file missing for less deletes nothing.
const absenceGap = 5 * time.Second

// A watched StatefulSet whose claims go with it (whenDeleted: Delete)
// keeps its pod and its data when its file is renamed away and back
// within the gap, and when the agent starts with the directory empty (a
// tmpfs mounted over it: a filesystem not there yet): nothing is deleted,
// a Warning event names the directory, and once the files are back the
// set runs on with its data.
func TestWatchedStatefulSetSurvivesAMissingFileAndAnEmptyDirectory(t *testing.T) {
	onEachRuntime(t, watchedStatefulSetSurvives)
}

func watchedStatefulSetSurvives(t *testing.T, n *node) {
	dir := t.TempDir()
	n.watched = append(n.watched, dir)
	set := strings.Replace(dbStatefulSet, "replicas: 3", "replicas: 1\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}", 1)
	writeFile(t, filepath.Join(dir, "db.yaml"), set)
	writeFile(t, filepath.Join(dir, "config.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {a: b}\n")
	n.must("run", "-d", "-f", dir)
	n.waitStatefulSet("db-0 ready", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 1 })
	n.waitExec("db-0", "db", "its line in its claim", func(out string) bool { return out == "db-0 start\n" }, "cat", "/data/log")
	before := n.setPods()["db-0"]

	file := filepath.Join(dir, "db.yaml")
	if err := os.Rename(file, file+".away"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a scan that misses db (it logs it, or deletes db)", func() bool {
		tail := n.rt.logTail(400)
		_, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db")
		return err != nil || strings.Contains(tail, "deleted if still gone") && strings.Contains(tail, "StatefulSet default/db")
	})
	missed := time.Now() // at or after the scan that missed db
	if err := os.Rename(file+".away", file); err != nil {
		t.Fatal(err)
	}
	// A scan the gap after the one that missed db could delete it (the
	// agent's recheck is one); a scan that applies a pod written once the
	// gap is over is the sign that one ran.
	n.scanAfter(missed.Add(absenceGap), filepath.Join(dir, "marker1.yaml"), "marker1")
	n.checkSetSurvived("db.yaml renamed away and back", before)

	n.rt.stopAgent()
	unmount := mountEmptyOver(t, dir)
	n.startAgent()
	waitFor(t, "a WatchedDirectoryEmpty event naming "+dir, func() bool { return n.nodeWarnings("WatchedDirectoryEmpty", dir) >= 1 })
	first := time.Now() // after the agent's first scan
	// A second scan of the directory still empty (a file of comments
	// only: no object), the gap after the first, where a recheck would
	// delete; its own WatchedDirectoryEmpty event is the sign that it ran.
	time.Sleep(time.Until(first.Add(absenceGap)))
	writeFile(t, filepath.Join(dir, "comments.yaml"), "# nothing here yet\n")
	waitFor(t, "a second WatchedDirectoryEmpty event naming "+dir+", the gap after the first", func() bool {
		return n.nodeWarnings("WatchedDirectoryEmpty", dir) >= 2
	})
	n.checkSetSurvived("the agent started on an empty directory", before)
	unmount()
	writeFile(t, filepath.Join(dir, "marker2.yaml"), dirPod("marker2", "x"))
	n.waitPod("marker2", "the directory read again", running("app")) // a scan that finds the files back
	n.checkSetSurvived("the files back", before)
}

// scanAfter waits until at, then writes a pod into file and waits for it
// to run: a scan of the directory began after at.
func (n *node) scanAfter(at time.Time, file, pod string) {
	n.t.Helper()
	time.Sleep(time.Until(at))
	writeFile(n.t, file, dirPod(pod, "x"))
	n.waitPod(pod, "a scan after "+at.Format(time.RFC3339Nano), running("app"))
}

// checkSetSurvived fails unless db-0 is the pod before was, running, and
// its claim holds its one start.
func (n *node) checkSetSurvived(when string, before v1.Pod) {
	n.t.Helper()
	detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db")
	if err != nil || detail.StatefulSet.DeletionTimestamp != nil {
		n.t.Fatalf("%s: StatefulSet db: %v; want it there, not deleted\n%s", when, err, n.rt.logTail(40))
	}
	if p, ok := n.setPods()["db-0"]; !ok || p.UID != before.UID {
		n.t.Fatalf("%s: db-0 %s; want %s, the pod of before", when, p.UID, before.UID)
	}
	n.waitExec("db-0", "db", "its claim's data", func(out string) bool { return out == "db-0 start\n" }, "cat", "/data/log")
}

// nodeWarnings counts the node's Warning events of reason whose message
// names dir, repeats included.
func (n *node) nodeWarnings(reason, dir string) int {
	detail, err := n.client.Node(context.Background())
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range detail.Events {
		if e.Type == agentapi.EventWarning && e.Reason == reason && strings.Contains(e.Message, dir) {
			count += e.Count
		}
	}
	return count
}

// mountEmptyOver mounts an empty tmpfs (root's, mode 0755: a directory
// the agent trusts) over dir until the test ends or unmount is called.
func mountEmptyOver(t *testing.T, dir string) (unmount func()) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "berth-e2e-empty", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs over %s: %v: %s", dir, err, out)
	}
	mounted := true
	unmount = func() {
		if !mounted {
			return
		}
		mounted = false
		if err := unix.Unmount(dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("unmount %s: %v", dir, err)
		}
	}
	t.Cleanup(unmount)
	return unmount
}
