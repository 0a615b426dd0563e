package monitor_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/monitor"
)

type want struct {
	stream  crilog.Stream
	partial bool
	content string
}

func checkRecords(t *testing.T, got []crilog.Record, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d records, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.Stream != w.stream || g.Partial != w.partial || string(g.Content) != w.content {
			t.Errorf("record %d: got %s partial=%v len %d, want %s partial=%v len %d (%.20q)",
				i, g.Stream, g.Partial, len(g.Content), w.stream, w.partial, len(w.content), w.content)
		}
	}
}

// TestLogSplitsLinesAsKubeletReadsThem: '\n' ends a line ("\r\n" too);
// content over MaxContent goes out as P records of MaxContent; an
// unterminated tail is P.
func TestLogSplitsLinesAsKubeletReadsThem(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-lines"
	fill := func(n int, c string) string { return "head -c " + strconv.Itoa(n) + " /dev/zero | tr '\\0' " + c }
	logPath, _ := e.create(t, id, bundleOpts{args: sh(`printf 'one\ntwo\r\n\n'; ` + fill(crilog.MaxContent, "a") + `; echo; ` +
		fill(2*crilog.MaxContent+5, "b") + `; echo; ` + fill(crilog.MaxContent+10, "x"))})
	e.start(t, id)
	e.waitExitFile(t, id, 10*time.Second)
	a, b, x := strings.Repeat("a", crilog.MaxContent), strings.Repeat("b", crilog.MaxContent), strings.Repeat("x", crilog.MaxContent)
	checkRecords(t, readLog(t, logPath), []want{
		{crilog.Stdout, false, "one"}, {crilog.Stdout, false, "two"}, {crilog.Stdout, false, ""},
		{crilog.Stdout, false, a},
		{crilog.Stdout, true, b}, {crilog.Stdout, true, b}, {crilog.Stdout, false, "bbbbb"},
		{crilog.Stdout, true, x}, {crilog.Stdout, true, "xxxxxxxxxx"},
	})
}

// TestStreamsWriteWholeRecords: stdout and stderr written at once never
// interleave inside a record.
func TestStreamsWriteWholeRecords(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-both"
	loop := `l=$(head -c 3000 /dev/zero | tr '\0' z); i=0; while [ $i -lt 200 ]; do echo $l; i=$((i+1)); done`
	logPath, _ := e.create(t, id, bundleOpts{args: sh("(" + loop + ") & (" + loop + ") >&2 & wait")})
	e.start(t, id)
	e.waitExitFile(t, id, 20*time.Second)
	recs := readLog(t, logPath)
	for _, stream := range []crilog.Stream{crilog.Stdout, crilog.Stderr} {
		lines := crilog.Lines(recs, stream)
		if len(lines) != 200 {
			t.Errorf("%s: %d lines, want 200", stream, len(lines))
		}
		for _, l := range lines {
			if len(l) != 3000 || strings.Trim(l, "z") != "" {
				t.Fatalf("%s: a line of %d bytes, want 3000 z", stream, len(l))
			}
		}
	}
}

// TestReopenAfterRotation: once reopened, records go to the new file.
func TestReopenAfterRotation(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-rotate"
	logPath, _ := e.create(t, id, bundleOpts{args: sh("while true; do echo tick; sleep 0.02; done")})
	e.start(t, id)
	waitLines(t, logPath, 2)
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.client.ReopenLog(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitLines(t, logPath, 3)
	old := len(readLog(t, logPath+".1"))
	waitLines(t, logPath, 6)
	if now := len(readLog(t, logPath+".1")); now != old {
		t.Errorf("the rotated file grew from %d to %d records after the reopen", old, now)
	}
	if err := e.client.ReopenLog(ctx, "unknown"); err == nil {
		t.Error("reopen of an unknown container: no error")
	}
}

// TestCreateRefusesWhatIsNotAPlainLog: a FIFO, a hard link or a directory
// symlink planted where the log goes is refused, saying why, and nothing is
// created; a log that was there before a failed create stays.
func TestCreateRefusesWhatIsNotAPlainLog(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	logs := filepath.Join(e.dir, "logs")
	elsewhere := t.TempDir()
	plant := map[string]func(path string) error{
		"not a regular file": func(path string) error { return unix.Mkfifo(path, 0o600) },
		"links: refused": func(path string) error {
			victim := filepath.Join(elsewhere, "victim")
			if err := os.WriteFile(victim, nil, 0o600); err != nil {
				return err
			}
			return os.Link(victim, path)
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	for why, make := range plant {
		n++
		id := e.prefix + "-plant" + strconv.Itoa(n)
		bundle, cgroup := e.bundle(t, id, bundleOpts{args: sh("echo owned")})
		if err := os.MkdirAll(filepath.Join(logs, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := make(filepath.Join(logs, id, "0.log")); err != nil {
			t.Fatal(err)
		}
		_, err := e.client.Create(ctx, monitor.CreateRequest{ID: id, Bundle: bundle, CgroupPath: cgroup,
			LogDirectory: logs, LogRelPath: id + "/0.log"})
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("create over a planted %q: %v", why, err)
		}
	}
	id := e.prefix + "-dirlink"
	bundle, cgroup := e.bundle(t, id, bundleOpts{args: sh("echo owned")})
	if err := os.Symlink(elsewhere, filepath.Join(logs, id)); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.Create(ctx, monitor.CreateRequest{ID: id, Bundle: bundle, CgroupPath: cgroup,
		LogDirectory: logs, LogRelPath: id + "/0.log"})
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("create beneath a directory symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "0.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a log was made through the link: %v", err)
	}

	// A failed create removes only the log it made.
	id = e.prefix + "-kept"
	bundle, cgroup = e.bundle(t, id, bundleOpts{args: []string{"/bin/does-not-exist"}})
	t.Cleanup(func() { _ = e.runc.Delete(context.Background(), id, true) })
	kept := filepath.Join(logs, id, "0.log")
	if err := os.MkdirAll(filepath.Dir(kept), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, []byte("earlier\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Create(ctx, monitor.CreateRequest{ID: id, Bundle: bundle, CgroupPath: cgroup,
		LogDirectory: logs, LogRelPath: id + "/0.log"}); err == nil {
		t.Fatal("create of a missing executable: no error")
	}
	if data, err := os.ReadFile(kept); err != nil || string(data) != "earlier\n" {
		t.Errorf("the earlier log: %q, %v; want it kept", data, err)
	}
}
