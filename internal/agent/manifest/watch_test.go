package manifest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type watchUpdate struct {
	bundle *Bundle
	err    error
}

// startWatch runs Watch on dir until the test ends and returns its updates.
func startWatch(t *testing.T, dir string, interval time.Duration) <-chan watchUpdate {
	t.Helper()
	return startWatchRechecked(t, dir, interval, nil)
}

// startWatchRechecked is startWatch with Watch's recheck channel.
func startWatchRechecked(t *testing.T, dir string, interval time.Duration, recheck <-chan struct{}) <-chan watchUpdate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan watchUpdate, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, dir, interval, recheck, func(b *Bundle, err error) { updates <- watchUpdate{b, err} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return updates
}

// nextUpdate waits at most a second for Watch to report.
func nextUpdate(t *testing.T, updates <-chan watchUpdate) watchUpdate {
	t.Helper()
	select {
	case u := <-updates:
		return u
	case <-time.After(time.Second):
		t.Fatal("no update within a second")
		return watchUpdate{}
	}
}

func expectNoUpdate(t *testing.T, updates <-chan watchUpdate) {
	t.Helper()
	select {
	case u := <-updates:
		t.Fatalf("unexpected update: pods %v, err %v", podNames(u.bundle), u.err)
	case <-time.After(400 * time.Millisecond):
	}
}

func podNames(b *Bundle) string {
	if b == nil {
		return "<no bundle>"
	}
	var names []string
	for _, p := range b.Pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// rescanEveryHour leaves change detection to inotify alone.
const rescanEveryHour = time.Hour

func TestWatchSeesAddChangeRemove(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox:1.36"))
	updates := startWatch(t, dir, rescanEveryHour)
	if u := nextUpdate(t, updates); u.err != nil || podNames(u.bundle) != "a" {
		t.Fatalf("initial update: pods %s, err %v; want a", podNames(u.bundle), u.err)
	}

	writeFile(t, dir, "b.yaml", podYAML("b", "busybox:1.36"))
	added := nextUpdate(t, updates)
	if added.err != nil || podNames(added.bundle) != "a,b" {
		t.Fatalf("after adding b.yaml: pods %s, err %v; want a,b", podNames(added.bundle), added.err)
	}

	writeFile(t, dir, "b.yaml", podYAML("b", "busybox:1.37"))
	changed := nextUpdate(t, updates)
	oldB, newB := added.bundle.Pod("default", "b"), changed.bundle.Pod("default", "b")
	if newB == nil || newB.Spec.Containers[0].Image != "busybox:1.37" || newB.UID == oldB.UID {
		t.Fatalf("after changing b.yaml: pod b %+v, want the new image and a new uid", newB)
	}

	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if removed := nextUpdate(t, updates); podNames(removed.bundle) != "b" {
		t.Fatalf("after removing a.yaml: pods %s, want b", podNames(removed.bundle))
	}

	writeFile(t, dir, ".b.yaml.swp", "editor state")
	writeFile(t, dir, "b.yaml~", "backup")
	writeFile(t, dir, "b.yaml", podYAML("b", "busybox:1.37")) // same content
	expectNoUpdate(t, updates)
}

func TestWatchSeesAtomicSave(t *testing.T) {
	dir := t.TempDir()
	updates := startWatch(t, dir, rescanEveryHour)
	if u := nextUpdate(t, updates); u.err != nil || len(u.bundle.Pods) != 0 {
		t.Fatalf("initial update of an empty directory: pods %s, err %v", podNames(u.bundle), u.err)
	}
	temp := writeFile(t, dir, ".web.yaml.tmp", podYAML("web", "nginx"))
	if err := os.Rename(temp, filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	if u := nextUpdate(t, updates); podNames(u.bundle) != "web" {
		t.Fatalf("after renaming into place: pods %s, want web", podNames(u.bundle))
	}
}

func TestWatchKeepsGoingPastInvalidFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox"))
	broken := writeFile(t, dir, "b.yaml", podYAML("b", "busybox")+"    imagePulPolicy: Always\n")
	updates := startWatch(t, dir, rescanEveryHour)
	u := nextUpdate(t, updates)
	if podNames(u.bundle) != "a" || u.err == nil || !strings.Contains(u.err.Error(), broken+`: Pod default/b: unknown field`) {
		t.Fatalf("initial update: pods %s, err %v; want a, and b.yaml's problem", podNames(u.bundle), u.err)
	}

	writeFile(t, dir, "b.yaml", podYAML("b", "busybox"))
	if u := nextUpdate(t, updates); u.err != nil || podNames(u.bundle) != "a,b" {
		t.Fatalf("after fixing b.yaml: pods %s, err %v; want a,b", podNames(u.bundle), u.err)
	}

	writeFile(t, dir, "c.yaml", podYAML("a", "nginx"))
	if u := nextUpdate(t, updates); podNames(u.bundle) != "a,b" || u.err == nil || !strings.Contains(u.err.Error(), "also defined in") {
		t.Fatalf("after duplicating pod a: pods %s, err %v; want the later file left out", podNames(u.bundle), u.err)
	}
	if err := os.Remove(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	nextUpdate(t, updates)

	writeFile(t, dir, "b.yaml", podYAML("b", ""))
	u = nextUpdate(t, updates)
	if podNames(u.bundle) != "a" || u.err == nil || !strings.Contains(u.err.Error(), "spec.containers[0].image: Required value") {
		t.Fatalf("after making pod b invalid: pods %s, err %v; want a and b's validation problem", podNames(u.bundle), u.err)
	}
}

// A file that holds no object (truncated by a write in place, not yet
// written) is a file with a problem: what it held is kept.
func TestWatchLeavesOutAnEmptyFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox"))
	empty := writeFile(t, dir, "b.yaml", "")
	updates := startWatch(t, dir, rescanEveryHour)
	u := nextUpdate(t, updates)
	var invalid *InvalidError
	if podNames(u.bundle) != "a" || !errors.As(u.err, &invalid) || !slices.Equal(invalid.Sources(), []string{empty}) ||
		!strings.Contains(u.err.Error(), "holds no object") {
		t.Fatalf("with an empty b.yaml: pods %s, err %v; want a, and b.yaml named", podNames(u.bundle), u.err)
	}
	writeFile(t, dir, "b.yaml", "# a comment\n---\n")
	if u := nextUpdate(t, updates); u.err == nil || !strings.Contains(u.err.Error(), "holds no object") {
		t.Fatalf("with only a comment in b.yaml: err %v; want it named", u.err)
	}
}

func TestWatchLeavesOutPodsOfInvalidConfigMaps(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", webManifests)
	writeFile(t, dir, "other.yaml", podYAML("other", "busybox"))
	updates := startWatch(t, dir, rescanEveryHour)
	if u := nextUpdate(t, updates); u.err != nil || podNames(u.bundle) != "other,web" {
		t.Fatalf("initial update: pods %s, err %v", podNames(u.bundle), u.err)
	}

	// Split the ConfigMap out of web.yaml into its own, invalid, file: the
	// web pod's reference no longer resolves, so web.yaml is left out too.
	parts := strings.SplitN(webManifests, "---\n", 2)
	writeFile(t, dir, "config.yaml", strings.Replace(parts[0], "  log_level: info", "  log_level: info\n  bad key: x", 1))
	writeFile(t, dir, "web.yaml", parts[1])
	var u watchUpdate
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if u = nextUpdate(t, updates); u.err != nil && strings.Contains(u.err.Error(), "Not found") {
			break
		}
	}
	var inv *InvalidError
	if podNames(u.bundle) != "other" || !errors.As(u.err, &inv) {
		t.Fatalf("pods %s, err %v; want only other", podNames(u.bundle), u.err)
	}
	want := []string{filepath.Join(dir, "config.yaml"), filepath.Join(dir, "web.yaml")}
	if got := inv.Sources(); !slices.Equal(got, want) {
		t.Errorf("sources left out = %v, want %v\n%v", got, want, u.err)
	}
}

func TestWatchWaitsForTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	updates := startWatch(t, dir, 50*time.Millisecond)
	if u := nextUpdate(t, updates); u.bundle != nil || !errors.Is(u.err, fs.ErrNotExist) {
		t.Fatalf("missing directory: bundle %v, err %v; want no bundle and a not-exist error", u.bundle, u.err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox"))
	u := nextUpdate(t, updates)
	for u.bundle != nil && len(u.bundle.Pods) == 0 { // the rescan may see the directory before the file
		u = nextUpdate(t, updates)
	}
	if podNames(u.bundle) != "a" {
		t.Fatalf("after creating the directory: pods %s, err %v; want a", podNames(u.bundle), u.err)
	}

	// And it keeps following the new directory.
	writeFile(t, dir, "b.yaml", podYAML("b", "busybox"))
	if u := nextUpdate(t, updates); podNames(u.bundle) != "a,b" {
		t.Fatalf("after adding b.yaml: pods %s, want a,b", podNames(u.bundle))
	}
}

// A directory that becomes writable by others is refused on the next scan
// (nil bundle: the agent leaves its pods as they are), and taken back when
// it is fixed.
func TestWatchRefusesAnUntrustedDirectory(t *testing.T) {
	dir := trustedBase(t)
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox"))
	updates := startWatch(t, dir, 50*time.Millisecond)
	if u := nextUpdate(t, updates); podNames(u.bundle) != "a" {
		t.Fatalf("pods %s, err %v; want a", podNames(u.bundle), u.err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if u := nextUpdate(t, updates); u.bundle != nil || u.err == nil || !strings.Contains(u.err.Error(), "writable by group or others") {
		t.Fatalf("world-writable: pods %s, err %v; want no bundle and the refusal", podNames(u.bundle), u.err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if u := nextUpdate(t, updates); podNames(u.bundle) != "a" {
		t.Fatalf("fixed: pods %s, err %v; want a", podNames(u.bundle), u.err)
	}
}

// A recheck reports the directory at once even when nothing changed (an
// ordinary rescan of an unchanged directory reports nothing).
func TestWatchRecheckReportsAnUnchangedDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "busybox"))
	recheck := make(chan struct{}, 1)
	updates := startWatchRechecked(t, dir, 50*time.Millisecond, recheck)
	if u := nextUpdate(t, updates); podNames(u.bundle) != "a" {
		t.Fatalf("initial update: pods %s, want a", podNames(u.bundle))
	}
	expectNoUpdate(t, updates)
	for range 2 {
		recheck <- struct{}{}
		if u := nextUpdate(t, updates); u.err != nil || podNames(u.bundle) != "a" {
			t.Fatalf("after a recheck: pods %s, err %v; want a reported again", podNames(u.bundle), u.err)
		}
	}
	expectNoUpdate(t, updates)
}
