package monitor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/monitor"
)

// A container that can write its log directory (a log shipper with a
// hostPath over /var/log) plants <ctr>/0.log -> a host file: the monitor
// refuses to create the container rather than write through the link,
// and a reopen after rotation keeps the file it has.
func TestLogSymlinkPlantedByAContainerIsNotFollowed(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	victim := filepath.Join(t.TempDir(), "x.sh")
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func() {
		t.Helper()
		if data, err := os.ReadFile(victim); err != nil || string(data) != "untouched\n" {
			t.Fatalf("the symlink's target: %q, %v; want it untouched", data, err)
		}
	}

	planted := e.prefix + "-planted"
	bundle, cgroup := e.bundle(t, planted, bundleOpts{args: sh("echo owned")})
	if err := os.MkdirAll(filepath.Join(e.dir, "logs", planted), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(e.dir, "logs", planted, "0.log")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.client.Create(ctx, monitor.CreateRequest{ID: planted, Bundle: bundle, CgroupPath: cgroup,
		LogDirectory: filepath.Join(e.dir, "logs"), LogRelPath: planted + "/0.log"})
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("create with a planted log symlink: %v; want refused, saying symlink", err)
	}
	untouched()

	ticker := e.prefix + "-ticker"
	logPath, _ := e.create(t, ticker, bundleOpts{args: sh("while true; do echo tick; sleep 0.05; done")})
	e.start(t, ticker)
	waitLines(t, logPath, 1)
	if err := os.Rename(logPath, logPath+".1"); err != nil { // rotation
		t.Fatal(err)
	}
	if err := os.Symlink(victim, logPath); err != nil {
		t.Fatal(err)
	}
	if err := e.client.ReopenLog(ctx, ticker); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("reopen over a planted symlink: %v; want refused, saying symlink", err)
	}
	n := len(readLog(t, logPath+".1"))
	waitLines(t, logPath+".1", n+3) // the monitor goes on writing the file it has
	untouched()
}

func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(crilog.Lines(readLog(t, path), crilog.Stdout)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d lines after 10s", path, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
