package logrotate

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime writes one container's log as a runtime does: appending to
// the file open at its path, reopened on Reopen.
type fakeRuntime struct {
	t    *testing.T
	path string

	mu        sync.Mutex
	f         *os.File
	next      int   // the next line's number
	reopenErr error // what Reopen fails with
	reopens   int
}

func newFakeRuntime(t *testing.T, path string) *fakeRuntime {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &fakeRuntime{t: t, path: path}
	r.open()
	t.Cleanup(func() { r.f.Close() })
	return r
}

func (r *fakeRuntime) open() {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		r.t.Fatal(err)
	}
	r.f = f
}

// write appends n numbered lines.
func (r *fakeRuntime) write(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range n {
		fmt.Fprintf(r.f, "2026-01-01T00:00:00Z stdout F line %d\n", r.next)
		r.next++
	}
}

func (r *fakeRuntime) Reopen(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "c1" {
		return fmt.Errorf("container %s: not found", id)
	}
	if r.reopenErr != nil {
		return r.reopenErr
	}
	r.reopens++
	r.f.Close()
	r.open()
	return nil
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

type fixture struct {
	root, dir, log string
	rt             *fakeRuntime
	clock          *clocktesting.FakeClock
	m              *Manager
	warnings       *lockedLog // what the manager logged
}

// lockedLog is a log the manager writes from its goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newFixture(t *testing.T, p Policy) *fixture {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "ns_pod_uid", "app")
	fx := &fixture{root: root, dir: dir, log: filepath.Join(dir, "0.log"), clock: clocktesting.NewFakeClock(t0), warnings: &lockedLog{}}
	fx.rt = newFakeRuntime(t, fx.log)
	m, err := New(Config{
		Root: root, Policy: p, Clock: fx.clock, Reopen: fx.rt.Reopen, Logger: slog.New(slog.NewTextHandler(fx.warnings, nil)),
		Containers: func(context.Context) ([]Container, error) {
			return []Container{{ID: "c1", LogPath: fx.log}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fx.m = m
	return fx
}

// rotateAt runs one round at t0+offset, and waits for the compression it
// started.
func (fx *fixture) rotateAt(t *testing.T, offset time.Duration) error {
	t.Helper()
	fx.clock.SetTime(t0.Add(offset))
	defer fx.m.WaitCompressed()
	return fx.m.Rotate(context.Background(), Container{ID: "c1", LogPath: fx.log})
}

func (fx *fixture) files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// lineNumbers reads the numbered lines of the rotated files and the
// current log, in that order, as `berth logs` does.
func lineNumbers(t *testing.T, log string) []int {
	t.Helper()
	files, err := RotatedFiles(log)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, file := range append(files, log) {
		r, err := OpenRotated(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "2026-01-01T00:00:00Z stdout F line %d", &n); err != nil {
				t.Fatalf("%s: %q: %v", file, sc.Text(), err)
			}
			nums = append(nums, n)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r.Close()
	}
	return nums
}

// contiguous fails unless nums are first, first+1, ..., last.
func contiguous(t *testing.T, nums []int, first, last int) {
	t.Helper()
	if len(nums) == 0 || nums[0] != first || nums[len(nums)-1] != last || len(nums) != last-first+1 {
		t.Fatalf("lines %v...; want %d to %d", head(nums), first, last)
	}
	for i, n := range nums {
		if n != first+i {
			t.Fatalf("line %d at position %d; want %d", n, i, first+i)
		}
	}
}

func head(nums []int) []int { return nums[:min(len(nums), 10)] }

func TestRotateLeavesASmallLog(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 1 << 20, MaxFiles: 3})
	fx.rt.write(10)
	if err := fx.rotateAt(t, 0); err != nil {
		t.Fatal(err)
	}
	if got := fx.files(t); !slices.Equal(got, []string{"0.log"}) || fx.rt.reopens != 0 {
		t.Errorf("files %v, %d reopens; want the log alone, not reopened", got, fx.rt.reopens)
	}
}

// Rounds over max size: the log is renamed to its stamp and reopened; the
// newest rotated file stays plain, older ones are compressed, and beyond
// MaxFiles the oldest go. Every line that is kept is read back once, in
// order, across .gz, plain and current files.
func TestRotateKeepsMaxFilesNewestPlainOlderCompressed(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 1000, MaxFiles: 4})
	var kept []int // the first line of each rotated file, oldest first
	for round := range 6 {
		kept = append(kept, fx.rt.next)
		fx.rt.write(50)
		if err := fx.rotateAt(t, time.Duration(round)*time.Minute); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	fx.rt.write(5)
	if fx.rt.reopens != 6 {
		t.Errorf("%d reopens; want 6", fx.rt.reopens)
	}
	want := []string{"0.log", "0.log.20260301-100300.gz", "0.log.20260301-100400.gz", "0.log.20260301-100500"}
	if got := fx.files(t); !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
	contiguous(t, lineNumbers(t, fx.log), kept[3], fx.rt.next-1)
}

func TestRotateUndoesTheRenameWhenReopenFails(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 2})
	fx.rt.write(10)
	fx.rt.reopenErr = errors.New("monitor gone")
	err := fx.rotateAt(t, 0)
	if err == nil || !strings.Contains(err.Error(), "monitor gone") || !strings.Contains(err.Error(), "rotation undone") {
		t.Fatalf("rotate: %v; want the reopen's error, rotation undone", err)
	}
	if got := fx.files(t); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("files %v; want the log back under its name", got)
	}
	fx.rt.write(1) // still written to the same file
	contiguous(t, lineNumbers(t, fx.log), 0, 10)
	// The next round succeeds.
	fx.rt.reopenErr = nil
	if err := fx.rotateAt(t, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := fx.files(t); !slices.Equal(got, []string{"0.log", "0.log.20260301-100100"}) {
		t.Errorf("files %v after the retry", got)
	}
}

func TestRotateReopensAMissingLog(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 2})
	if err := os.Remove(fx.log); err != nil {
		t.Fatal(err)
	}
	if err := fx.rotateAt(t, 0); err != nil {
		t.Fatal(err)
	}
	if fx.rt.reopens != 1 {
		t.Errorf("%d reopens; want 1", fx.rt.reopens)
	}
}

// Twice in one second: the second round never replaces the first's file.
func TestRotateNeverReplacesARotatedFile(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	fx.rt.write(10)
	if err := fx.rotateAt(t, 0); err != nil {
		t.Fatal(err)
	}
	fx.rt.write(10)
	if err := fx.rotateAt(t, 500*time.Millisecond); err == nil {
		t.Fatal("a second rotation in the same second succeeded")
	}
	fx.rt.write(1)
	contiguous(t, lineNumbers(t, fx.log), 0, 20)
}

// An interrupted round's leftovers go; files the manager did not name stay.
func TestRotateCleansLeftoversAndKeepsForeignFiles(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	fx.rt.write(10)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(fx.dir, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("0.log.20260301-090000.tmp", "half a gzip")
	write("0.log.20260301-090100", "plain")
	writeGzip(t, filepath.Join(fx.dir, "0.log.20260301-090100.gz"), "plain")
	write("0.log.backup", "someone's")
	write("1.log", "another instance")
	if err := fx.rotateAt(t, time.Hour); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20260301-090100.gz", "0.log.20260301-110000", "0.log.backup", "1.log"}
	if got := fx.files(t); !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
}

func writeGzip(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	_, _ = io.WriteString(zw, content)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRotateRefusesPathsOutsideTheRootAndSymlinks(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 2})
	fx.rt.write(10)
	outside := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(outside, make([]byte, 1000), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(fx.root, "ns_evil_uid")
	if err := os.Symlink(filepath.Dir(outside), link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{outside, filepath.Join(fx.root, "..", "x.log"), filepath.Join(link, "x.log"), "relative/0.log"} {
		err := fx.m.Rotate(context.Background(), Container{ID: "c1", LogPath: path})
		if err == nil {
			t.Errorf("log %s: rotated", path)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(outside)); len(entries) != 1 || fx.rt.reopens != 0 {
		t.Errorf("outside the root: %d files, %d reopens; want it untouched", len(entries), fx.rt.reopens)
	}
}

// Run rotates on the clock's ticks.
func TestRunRotatesEveryInterval(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 3, Interval: 2 * time.Second})
	fx.rt.write(10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fx.m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !fx.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run did not start its ticker")
		}
		time.Sleep(time.Millisecond)
	}
	fx.clock.Step(2 * time.Second)
	for {
		fx.rt.mu.Lock()
		n := fx.rt.reopens
		fx.rt.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no rotation after one interval")
		}
		time.Sleep(time.Millisecond)
	}
}

// RotateAll rotates Workers containers at once.
func TestRotateAllUsesWorkers(t *testing.T) {
	root := t.TempDir()
	var containers []Container
	for i := range 4 {
		path := filepath.Join(root, fmt.Sprintf("ns_p%d_uid", i), "app", "0.log")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, 200), 0o640); err != nil {
			t.Fatal(err)
		}
		containers = append(containers, Container{ID: fmt.Sprint(i), LogPath: path})
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	var once sync.Once
	reopen := func(_ context.Context, id string) error {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		full := inFlight == 2
		mu.Unlock()
		if full {
			once.Do(func() { close(release) })
		}
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	}
	m, err := New(Config{Root: root, Policy: Policy{MaxSize: 100, Workers: 2}, Reopen: reopen,
		Clock:      clocktesting.NewFakeClock(t0),
		Containers: func(context.Context) ([]Container, error) { return containers, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RotateAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if most != 2 {
		t.Errorf("at most %d rotations at once; want 2", most)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{MaxSize: -1}, "max size -1: must be greater than 0"},
		{Policy{MaxFiles: 1}, "max files 1: must be at least 2"},
		{Policy{Interval: time.Millisecond}, "monitor interval 1ms: must be at least 1s"},
		{Policy{Workers: -2}, "max workers -2: must be at least 1"},
	} {
		err := tc.p.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.p, err, tc.want)
		}
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Errorf("the default policy: %v", err)
	}
}

// A removed container's log and rotated files go with it; others stay.
func TestRemoveLog(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	for i := range 3 {
		fx.rt.write(10)
		if err := fx.rotateAt(t, time.Duration(i)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"0.log.20260301-090000.tmp", "0.log.backup", "1.log", "1.log.20260301-090000"} {
		if err := os.WriteFile(filepath.Join(fx.dir, name), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveLog(fx.root, fx.log); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log.backup", "1.log", "1.log.20260301-090000"}
	if got := fx.files(t); !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
	if err := RemoveLog(fx.root, fx.log); err != nil {
		t.Errorf("a log removed already: %v", err)
	}
	if err := RemoveLog(fx.root, filepath.Join(fx.root, "gone", "app", "0.log")); err != nil {
		t.Errorf("a directory that is gone: %v", err)
	}
}

// RemoveLog follows no symlink in the log's path: a container directory
// replaced by a link elsewhere (by whoever can write the pod log root)
// costs nothing outside the root, and a path outside it is refused.
func TestRemoveLogFollowsNoSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	victims := []string{filepath.Join(outside, "0.log"), filepath.Join(outside, "0.log.20260301-090000")}
	for _, v := range victims {
		if err := os.WriteFile(v, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "ns_pod_uid"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "ns_pod_uid", "app")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveLog(root, filepath.Join(root, "ns_pod_uid", "app", "0.log")); err == nil {
		t.Errorf("a log directory that is a symlink: no error")
	}
	if err := RemoveLog(root, filepath.Join(outside, "0.log")); err == nil {
		t.Errorf("a log outside the root: no error")
	}
	for _, v := range victims {
		if _, err := os.Stat(v); err != nil {
			t.Errorf("a file outside the log root: %v; want it kept", err)
		}
	}
}

// A file named as a rotated one that is not a regular file (a FIFO made
// by whoever can write the log directory) is reported, never opened for
// a read that would hold the compression, and every round, forever.
func TestRotateRefusesToCompressAFIFO(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	if err := unix.Mkfifo(filepath.Join(fx.dir, "0.log.20260301-090000"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.rt.write(10)
	done := make(chan error, 1)
	go func() { done <- fx.rotateAt(t, 0) }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(fx.warnings.String(), "not a regular file") {
			t.Errorf("Rotate: %v, logged %q; want the FIFO reported as not a regular file", err, fx.warnings.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the compression is held by a FIFO named as a rotated file")
	}
}

// A log written faster than gzip compresses is still rotated every round:
// while a compression of its files is under way, the next round renames
// and reopens the log (leaving the compression's temporary file alone)
// and starts no second compression.
func TestRotateDoesNotWaitForCompression(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	for round := range 2 {
		fx.rt.write(10)
		if err := fx.rotateAt(t, time.Duration(round)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(fx.dir, "0.log.20260301-100100.tmp")
	if err := os.WriteFile(tmp, []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.m.compressing[fx.log] = false // the compression of 100100 under way
	fx.rt.write(10)
	if err := fx.rotateAt(t, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20260301-100000.gz", "0.log.20260301-100100", "0.log.20260301-100100.tmp", "0.log.20260301-100200"}
	if got := fx.files(t); !slices.Equal(got, want) || fx.rt.reopens != 3 || !fx.m.compressing[fx.log] {
		t.Errorf("files %v, %d reopens, asked to look again %v; want %v, 3, true", got, fx.rt.reopens, fx.m.compressing[fx.log], want)
	}
}

// A rotation while a compression runs, after it listed the files, makes
// it look again once done: the file that rotation made older is
// compressed too, though no round follows.
func TestCompressionLooksAgainAfterARotation(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	listed, release := make(chan struct{}), make(chan struct{})
	first := true
	fx.m.listed = func() {
		if first {
			first = false
			close(listed)
			<-release
		}
	}
	fx.rt.write(10)
	fx.clock.SetTime(t0)
	if err := fx.m.Rotate(context.Background(), Container{ID: "c1", LogPath: fx.log}); err != nil {
		t.Fatal(err)
	}
	<-listed // it found 100000 alone: the newest, left plain
	fx.rt.write(10)
	fx.clock.SetTime(t0.Add(time.Minute))
	if err := fx.m.Rotate(context.Background(), Container{ID: "c1", LogPath: fx.log}); err != nil {
		t.Fatal(err)
	}
	close(release)
	fx.m.WaitCompressed()
	want := []string{"0.log", "0.log.20260301-100000.gz", "0.log.20260301-100100"}
	if got := fx.files(t); !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
}

// Compressions of different logs share Policy.Workers slots: with one,
// the second log's waits until the first's is done.
func TestCompressionsShareTheWorkers(t *testing.T) {
	root := t.TempDir()
	rts := map[string]*fakeRuntime{}
	var containers []Container
	for _, id := range []string{"c1", "c2"} {
		path := filepath.Join(root, "ns_"+id+"_uid", "app", "0.log")
		rts[id] = newFakeRuntime(t, path)
		containers = append(containers, Container{ID: id, LogPath: path})
	}
	clock := clocktesting.NewFakeClock(t0)
	m, err := New(Config{
		Root: root, Policy: Policy{MaxSize: 100, MaxFiles: 5, Workers: 1}, Clock: clock,
		Reopen:     func(ctx context.Context, id string) error { return rts[id].Reopen(ctx, "c1") },
		Containers: func(context.Context) ([]Container, error) { return containers, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	running, most, compressions := 0, 0, 0
	m.listed = func() {
		mu.Lock()
		running++
		compressions++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // a compression under way
		mu.Lock()
		running--
		mu.Unlock()
	}
	for round := range 3 {
		clock.SetTime(t0.Add(time.Duration(round) * time.Minute))
		for _, c := range containers {
			rts[c.ID].write(10)
			if err := m.Rotate(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.WaitCompressed()
	if most != 1 || compressions < 2 {
		t.Errorf("up to %d of %d compressions at once; want 1 (Workers)", most, compressions)
	}
}

// A rotated file removed while it is compressed (a round found it beyond
// the files kept) leaves no compressed copy and no temporary file; one
// still there is compressed.
func TestCompressLeavesNothingOfAFileRemovedMeanwhile(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 100, MaxFiles: 5})
	dir, err := openLogDir(fx.root, "ns_pod_uid/app")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, removed := range []bool{true, false} {
		name := "0.log.20260301-090000"
		path := filepath.Join(fx.dir, name)
		if err := os.WriteFile(path, []byte("old lines\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(src.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		want := []string{"0.log", name + gzSuffix}
		if removed {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			want = want[:1]
		}
		err = dir.compressOpen(context.Background(), src, &st, name)
		src.Close()
		if got := fx.files(t); err != nil || !slices.Equal(got, want) {
			t.Errorf("removed %v: %v, files %v; want %v", removed, err, got, want)
		}
	}
}

// A compressed file names, in its gzip header, the plain file it was
// made from: a reader holding that file open knows the .gz for the same
// file, and no other file of that inode. A .gz made elsewhere is not
// known.
func TestCompressedFileNamesItsSource(t *testing.T) {
	fx := newFixture(t, Policy{MaxSize: 1000, MaxFiles: 4})
	fx.rt.write(50)
	if err := fx.rotateAt(t, 0); err != nil {
		t.Fatal(err)
	}
	plain := fx.log + ".20260301-100000"
	held, err := os.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	st, err := held.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if src, ok := RotatedSource(plain); !ok || !src.Is(st) {
		t.Fatalf("source of %s: %+v, %v; want the file itself", plain, src, ok)
	}
	fx.rt.write(50)
	if err := fx.rotateAt(t, time.Minute); err != nil {
		t.Fatal(err)
	}
	src, ok := RotatedSource(plain + ".gz")
	if !ok || !src.Is(st) {
		t.Errorf("source of %s.gz: %+v, %v; want the plain file %+v", plain, src, ok, st.Sys())
	}
	if src, ok := RotatedSource(plain); !ok || !src.Is(st) { // listed plain, compressed since
		t.Errorf("source of %s, now compressed: %+v, %v; want the plain file", plain, src, ok)
	}
	other := src
	other.ModTime++ // the inode of the source, reused by a file written at another time
	if other.Is(st) {
		t.Errorf("a source of the same inode but another time is taken for the file held")
	}
	foreign := filepath.Join(fx.dir, "0.log.20260301-090000.gz")
	writeGzip(t, foreign, "2026-01-01T00:00:00Z stdout F x\n")
	if src, ok := RotatedSource(foreign); ok {
		t.Errorf("source of a .gz made elsewhere: %+v; want none", src)
	}
}
