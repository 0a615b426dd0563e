package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/crilog"
)

// rotatingLog is a container log written as the runtime's monitor writes
// it (appending CRI records to a file it holds open) and rotated by a
// logrotate.Manager whose reopen opens the path again.
type rotatingLog struct {
	path  string
	mu    sync.Mutex
	w     *os.File
	m     *logrotate.Manager
	clock *clocktesting.FakeClock
	next  int
}

func newRotatingLog(t *testing.T, maxFiles int) *rotatingLog {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "ns_pod_uid", "app", "0.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := appendLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l := &rotatingLog{path: path, w: w, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	t.Cleanup(func() { l.w.Close() })
	l.m, err = logrotate.New(logrotate.Config{
		Root: root, Policy: logrotate.Policy{MaxSize: 1, MaxFiles: maxFiles}, Clock: l.clock,
		Reopen: func(context.Context, string) error { return l.reopen() },
		Containers: func(context.Context) ([]logrotate.Container, error) {
			return []logrotate.Container{{ID: "c", LogPath: path}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}

func (l *rotatingLog) reopen() error {
	w, err := appendLog(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Close()
	l.w = w
	return nil
}

func writeRecord(t *testing.T, w *os.File, line string) {
	t.Helper()
	if _, err := w.Write(crilog.AppendRecord(nil, time.Now(), crilog.Stdout, false, []byte(line))); err != nil {
		t.Fatal(err)
	}
}

func (l *rotatingLog) write(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		writeRecord(t, l.w, fmt.Sprintf("line %d", l.next))
		l.next++
	}
}

func (l *rotatingLog) rotate(t *testing.T) {
	t.Helper()
	l.clock.Step(time.Second)
	if err := l.m.RotateAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.m.WaitCompressed()
}

// openRead opens a follower of l's log and copies its rotated files to c.
func openRead(t *testing.T, l *rotatingLog, c *logCopier) *logFollower {
	t.Helper()
	f, err := openLogFollower(l.path, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.copyRotated(); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeRotated writes n lines and rotates the log, rounds times.
func (l *rotatingLog) writeRotated(t *testing.T, rounds, n int) {
	t.Helper()
	for range rounds {
		l.write(t, n)
		l.rotate(t)
	}
}

// checkLines fails unless out is "line first" ... "line last", once each.
func checkLines(t *testing.T, out string, first, last int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != last-first+1 {
		t.Fatalf("%d lines (%q ... %q); want %d to %d", len(lines), lines[0], lines[len(lines)-1], first, last)
	}
	for i, line := range lines {
		if want := fmt.Sprintf("line %d", first+i); line != want {
			t.Fatalf("line %d is %q; want %q", i, line, want)
		}
	}
}

// A full read goes through the gzipped and the plain rotated files, then
// the current one.
func TestLogsReadAcrossRotatedFiles(t *testing.T) {
	l := newRotatingLog(t, 4)
	l.writeRotated(t, 5, 100)
	l.write(t, 7)
	files, _ := logrotate.RotatedFiles(l.path)
	if len(files) != 3 || !strings.HasSuffix(files[0], ".gz") || strings.HasSuffix(files[2], ".gz") {
		t.Fatalf("rotated files %v; want two gzipped and a plain one", files)
	}
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	if err := f.copyCurrent(); err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.String(), 200, l.next-1) // the first two rotations are gone
}

// Following while the log is written at full speed and rotated: every
// line once, in order.
func TestLogsFollowAcrossRotations(t *testing.T) {
	l := newRotatingLog(t, 100)
	var out bytes.Buffer
	l.write(t, 10)
	f, err := openLogFollower(l.path, newLogCopier(&out, logFilter{tail: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for range 20 {
			l.write(t, 500)
			l.rotate(t)
		}
		l.write(t, 3)
	}()
	err = f.followUntil(context.Background(), time.Millisecond, func() (bool, error) { return !done.Load(), nil })
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.String(), 0, l.next-1)
	if files, _ := logrotate.RotatedFiles(l.path); len(files) != 20 {
		t.Errorf("%d rotated files; want 20", len(files))
	}
}

// --tail counts the records of the rotated files and the current one
// together: the last ones, wherever they were written.
func TestLogsTailAcrossRotatedFiles(t *testing.T) {
	l := newRotatingLog(t, 4)
	l.writeRotated(t, 3, 100)
	l.write(t, 7)
	var out bytes.Buffer
	c := newLogCopier(&out, logFilter{tail: 150})
	f := openRead(t, l, c)
	if err := f.copyCurrent(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q before the tail was complete", out.String())
	}
	c.flush()
	checkLines(t, out.String(), l.next-150, l.next-1)
}

// Two rotations or more between two looks of the follower (a slow reader,
// a busy host): the files it never had open are read too, the compressed
// one included, before the new current one, and later rotations are
// followed as usual.
func TestLogsFollowReadsFilesRotatedBetweenTwoLooks(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.writeRotated(t, 2, 5)
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	for range 3 { // the open file, then two the follower never opens
		l.rotate(t)
		l.write(t, 5)
	}
	followSettled(t, f)
	l.rotate(t)
	l.write(t, 5)
	followSettled(t, f)
	checkLines(t, out.String(), 0, l.next-1)
}

// A follower behind by several rotations (the log rotated three times
// between two of its looks, the older files gzipped meanwhile) reads the
// files rotated in between before the current one: every line once.
func TestLogsFollowBehindSeveralRotations(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 50)
	var out bytes.Buffer
	f, err := openLogFollower(l.path, newLogCopier(&out, logFilter{tail: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.follow(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l.write(t, 100)
		l.rotate(t)
	}
	l.write(t, 10)
	if files, _ := logrotate.RotatedFiles(l.path); len(files) != 3 || !strings.HasSuffix(files[0], ".gz") {
		t.Fatalf("rotated files %v; want three, the file the follower reads gzipped", files)
	}
	followSettled(t, f)
	checkLines(t, out.String(), 0, l.next-1)
}

// followSettled makes the follower look until it has moved to the new
// file at the log's path: the first look that finds one waits for the
// old file to settle, the next moves.
func followSettled(t *testing.T, f *logFollower) {
	t.Helper()
	for range 2 {
		if err := f.follow(); err != nil {
			t.Fatal(err)
		}
	}
	if f.switching() {
		t.Fatal("the follower has not moved to the new log file after two looks")
	}
}

// followCaughtUp makes the follower look until it has read every file it
// holds to its end, at most looks times.
func followCaughtUp(t *testing.T, f *logFollower, looks int) {
	t.Helper()
	for i := 0; i == 0 || f.switching() || f.behind; i++ {
		if i == looks {
			t.Fatalf("the follower has not caught up after %d looks", looks)
		}
		if err := f.follow(); err != nil {
			t.Fatal(err)
		}
	}
}

// The old file grows after the new one has its first records
// (containerd's old writer writes what it held after ReopenContainerLog
// returned): the follower reads those records before the new file's, and
// loses none.
func TestLogsFollowWaitsForTheOldFileToSettle(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 5)
	var out bytes.Buffer
	f, err := openLogFollower(l.path, newLogCopier(&out, logFilter{tail: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l.rotate(t)
	files, _ := logrotate.RotatedFiles(l.path)
	if len(files) != 1 {
		t.Fatalf("rotated files %v; want one", files)
	}
	l.next = 7
	l.write(t, 3) // lines 7 to 9, in the new file
	if err := f.follow(); err != nil {
		t.Fatal(err)
	}
	late, err := appendLog(files[0]) // the old writer's last lines
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"line 5", "line 6"} {
		writeRecord(t, late, line)
	}
	late.Close()
	followSettled(t, f)
	checkLines(t, out.String(), 0, 9)
}

// The writer stops just after a rotation: the new log stays empty, and
// the lines of the files rotated since the follower's file are still
// printed, to the last.
func TestLogsFollowMovesOnToAnEmptyNewLog(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	if err := f.follow(); err != nil {
		t.Fatal(err)
	}
	l.rotate(t)
	l.write(t, 5)
	l.rotate(t) // the last lines are in a rotated file; the log is empty
	followSettled(t, f)
	checkLines(t, out.String(), 0, 9)
}

// The log goes (its container removed) while the follower waits for the
// old file to settle: it stops waiting, so that a follow of a container
// no longer running ends.
func TestLogsFollowStopsWaitingForAGoneLog(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	l.rotate(t)
	l.write(t, 1)
	if err := f.follow(); err != nil || !f.switching() {
		t.Fatalf("follow: %v, switching %v; want it waiting for the old file to settle", err, f.switching())
	}
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	if err := f.follow(); err != nil || f.switching() {
		t.Errorf("follow with the log gone: %v, switching %v; want it no longer waiting", err, f.switching())
	}
}

// An agent slow to say whether the container runs does not hold up the
// reading: lines written while the check waits are printed, and the
// follow ends with every line once the answer is no.
func TestLogsFollowWhileTheAgentIsSlow(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 5)
	out := &syncWriter{w: &bytes.Buffer{}}
	f := openRead(t, l, newLogCopier(out, logFilter{tail: -1}))
	release := make(chan struct{})
	var asked atomic.Int32
	running := func() (bool, error) {
		if asked.Add(1) == 1 {
			return true, nil
		}
		<-release // the agent answers no more
		return false, nil
	}
	done := make(chan error, 1)
	go func() { done <- f.followUntil(context.Background(), time.Millisecond, running) }()
	printed := func() string {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.w.(*bytes.Buffer).String()
	}
	for asked.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	l.write(t, 5)
	l.rotate(t)
	l.write(t, 5)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(printed(), "line 14\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("lines written while the agent was asked were not printed: %q", printed())
		}
		time.Sleep(time.Millisecond)
	}
	l.write(t, 1)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkLines(t, printed(), 0, 15)
}

// A follower that saw each new file but is slow to read keeps every file
// it saw open: rotation compresses and removes them meanwhile (only one
// rotated file kept here), and it still reads every line once, from its
// descriptors, and holds no file beyond the last.
func TestLogsFollowKeepsTheFilesItSaw(t *testing.T) {
	l := newRotatingLog(t, 2)
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	for range 4 {
		l.write(t, 100)
		l.rotate(t)
		if err := f.holdPath(); err != nil {
			t.Fatal(err)
		}
	}
	l.write(t, 7)
	if files, _ := logrotate.RotatedFiles(l.path); len(files) != 1 {
		t.Fatalf("rotated files %v; want one (the others removed)", files)
	}
	followCaughtUp(t, f, 20)
	checkLines(t, out.String(), 0, l.next-1)
}

// actionWriter runs act before each Write, then keeps what is written.
type actionWriter struct {
	bytes.Buffer
	act func()
}

func (w *actionWriter) Write(p []byte) (int, error) {
	w.act()
	return w.Buffer.Write(p)
}

// A follower far behind (a current file much larger than lookEvery) looks
// at the log while it reads that file: the file rotation makes meanwhile
// is held before it is removed, and its lines are printed.
func TestLogsFollowLooksWhileItReadsALargeFile(t *testing.T) {
	l := newRotatingLog(t, 2)
	f, err := openLogFollower(l.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l.write(t, lookEvery/16) // about twice lookEvery
	step := 0
	out := &actionWriter{act: func() {
		switch {
		case step == 0: // the follower reads the old file: rotate, write the next
			l.rotate(t)
			l.write(t, 10)
			step++
		case step == 1 && len(f.next) == 1: // it holds the next: rotate it away
			l.rotate(t)
			l.write(t, 10)
			l.rotate(t)
			l.write(t, 3)
			step++
		}
	}}
	f.c = newLogCopier(out, logFilter{tail: -1})
	followCaughtUp(t, f, 100)
	if step != 2 {
		t.Fatalf("the follower never held the next file while it read the old one (step %d)", step)
	}
	checkLines(t, out.String(), 0, l.next-1)
}

// A file held already is not held again when a look offers it after a
// newer one (it would be printed again after the newer one).
func TestLogsFollowHoldsEachFileOnce(t *testing.T) {
	l := newRotatingLog(t, 10)
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	l.rotate(t)
	if err := f.holdPath(); err != nil { // B, the new file
		t.Fatal(err)
	}
	again, err := os.Open(l.path) // B again, as a look that opened it before the rotation
	if err != nil {
		t.Fatal(err)
	}
	l.write(t, 5)
	l.rotate(t)
	l.write(t, 5)
	if err := f.holdPath(); err != nil { // C
		t.Fatal(err)
	}
	f.mu.Lock()
	err = f.holdLocked(again)
	f.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if n := f.ahead(); n != 2 {
		t.Fatalf("%d files held; want B and C, once each", n)
	}
	followCaughtUp(t, f, 20)
	checkLines(t, out.String(), 0, l.next-1)
}

// The file next after cur was rotated and removed (the oldest go first),
// and a file never held lies between it and a later held one: that file
// is read after the next one, not before.
func TestLogsFollowKeepsOrderWhenTheNextFileIsGone(t *testing.T) {
	l := newRotatingLog(t, 3) // two rotated files kept
	l.write(t, 5)
	var out bytes.Buffer
	f := openRead(t, l, newLogCopier(&out, logFilter{tail: -1}))
	hold := func() {
		t.Helper()
		if err := f.holdPath(); err != nil {
			t.Fatal(err)
		}
	}
	l.rotate(t) // A rotated; B current
	hold()
	l.write(t, 5)
	l.rotate(t) // B rotated; C current, never held
	l.write(t, 5)
	l.rotate(t) // C rotated; D current
	hold()
	l.write(t, 5)
	l.rotate(t) // D rotated; E current; A and B's rotated files gone
	l.write(t, 5)
	if files, _ := logrotate.RotatedFiles(l.path); len(files) != 2 {
		t.Fatalf("rotated files %v; want C's and D's", files)
	}
	followCaughtUp(t, f, 20)
	checkLines(t, out.String(), 0, l.next-1)
}
