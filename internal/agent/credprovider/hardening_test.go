package credprovider

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaver is a plugin that answers and exits, leaving a child that holds
// its stdout ($CALLS names the file it writes the child's pid to).
const leaver = `#!/bin/sh
cat >/dev/null
sleep 30 &
echo $! > "$CALLS"
cat "$RESPONSE_FILE"
`

// hanger never answers and has a child of its own.
const hanger = `#!/bin/sh
sleep 30 &
echo $! > "$CALLS"
exec sleep 30
`

func withPlugin(t *testing.T, f *fixture, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "bin", "fake"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
}

// gone reports whether pid has exited (a zombie no one reaps counts).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(data), ") ")
	return strings.HasPrefix(after, "Z")
}

func childPid(t *testing.T, f *fixture) int {
	t.Helper()
	data, err := os.ReadFile(f.calls)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil {
		t.Fatalf("the plugin's child pid: %q, %v", data, err)
	}
	return pid
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // the test fails below either way
			t.Fatalf("the plugin's child %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPluginLeavingAChildDoesNotHangThePull(t *testing.T) {
	f := newFixture(t, fakeConfig)
	withPlugin(t, f, leaver)
	f.answer(t, answerJSON("Image", "0s"))
	p := load(t, f)
	start := time.Now()
	if got := users(p, "a.registry.example/app"); got != "glob" {
		t.Errorf("users %q, want glob (the answer written before the plugin exited)", got)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the lookup took %s: it waited on the plugin's child", took)
	}
	waitGone(t, childPid(t, f))
}

func TestPluginTimeoutKillsItsProcessGroup(t *testing.T) {
	defer func(d time.Duration) { execTimeout = d }(execTimeout)
	execTimeout = 300 * time.Millisecond
	f := newFixture(t, fakeConfig)
	withPlugin(t, f, hanger)
	p := load(t, f)
	start := time.Now()
	if got := users(p, "a.registry.example/app"); got != "" {
		t.Errorf("users %q from a plugin that never answers", got)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the lookup took %s past a %s timeout", took, execTimeout)
	}
	waitGone(t, childPid(t, f))
}

// The config, the bin dir and each plugin are held to the auth_file's
// rule: owned by root (or berth's user), writable by no group or others.
func TestLoadRefusesFilesOthersMayWrite(t *testing.T) {
	for _, c := range []struct {
		what  string
		setup func(t *testing.T, f *fixture) string // the path the error names
		want  string
	}{
		{"group-writable config", func(t *testing.T, f *fixture) string { return chmod(t, f.config, 0o620) }, "has mode 0620: writable by group or others"},
		{"world-writable plugin", func(t *testing.T, f *fixture) string { return chmod(t, filepath.Join(f.dir, "bin", "fake"), 0o757) }, "has mode 0757"},
		{"group-writable bin dir", func(t *testing.T, f *fixture) string { return chmod(t, filepath.Join(f.dir, "bin"), 0o770) }, "has mode 0770"},
		{"plugin linked into an open directory", func(t *testing.T, f *fixture) string {
			open := filepath.Join(f.dir, "open")
			if err := os.Mkdir(open, 0o700); err != nil {
				t.Fatal(err)
			}
			chmod(t, open, 0o777)
			if err := os.Rename(filepath.Join(f.dir, "bin", "fake"), filepath.Join(open, "fake")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(open, "fake"), filepath.Join(f.dir, "bin", "fake")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(open, "fake")
		}, "open has mode 0777"},
		{"bin dir inside a directory others may write", func(t *testing.T, f *fixture) string {
			// the bin dir itself is root's and 0755, but whoever can write
			// the directory above can rename it away and put another there
			above := filepath.Join(f.dir, "shared")
			if err := os.Mkdir(above, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(f.dir, "bin"), filepath.Join(above, "bin")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(above, "bin"), filepath.Join(f.dir, "bin")); err != nil {
				t.Fatal(err)
			}
			return chmod(t, above, 0o777)
		}, "shared has mode 0777"},
		{"plugin owned by nobody", func(t *testing.T, f *fixture) string {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			path := filepath.Join(f.dir, "bin", "fake")
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return path
		}, "owned by uid 65534, want root (0)"},
	} {
		t.Run(c.what, func(t *testing.T) {
			f := newFixture(t, fakeConfig)
			path := c.setup(t, f)
			_, err := Load(f.config, filepath.Join(f.dir, "bin"), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%v; want refused, naming %s and %q", err, path, c.want)
			}
		})
	}
	f := newFixture(t, fakeConfig)
	p := load(t, f)
	chmod(t, filepath.Join(f.dir, "bin", "fake"), 0o777) // after Load: the run checks again
	f.answer(t, answerJSON("Image", "0s"))
	if got := users(p, "a.registry.example/app"); got != "" {
		t.Errorf("a plugin made world-writable after Load ran: users %q", got)
	}
	if runs := f.runs(t); len(runs) != 0 {
		t.Errorf("the plugin ran %d times", len(runs))
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
