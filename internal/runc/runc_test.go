package runc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

// fakeRunc writes a script that records its arguments, logs msg at error
// level to the --log file when msg is set, prints stdout and exits code.
func fakeRunc(t *testing.T, msg, stdout string, code int) (*Runc, string) {
	t.Helper()
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	script := `#!/bin/sh
echo "$@" > ` + argsFile + `
while [ $# -gt 0 ]; do
  if [ "$1" = --log ]; then log=$2; fi
  shift
done
echo '{"level":"warning","msg":"noise","time":"2024-01-01T00:00:00Z"}' >> "$log"
if [ -n '` + msg + `' ]; then
  echo '{"level":"error","msg":"` + msg + `","time":"2024-01-01T00:00:00Z"}' >> "$log"
fi
printf '%s' '` + stdout + `'
exit ` + string(rune('0'+code)) + "\n"
	path := filepath.Join(dir, "runc")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runc{Path: path, Root: filepath.Join(dir, "root")}, argsFile
}

func lastArgs(t *testing.T, file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func TestErrorsCarryRuncMessageAndClass(t *testing.T) {
	ctx := context.Background()
	r, _ := fakeRunc(t, "boom in update", "", 1)
	err := r.Update(ctx, "abc", []byte("{}"))
	if err == nil || err.Error() != "runc update abc: boom in update" {
		t.Fatalf("update: got %v", err)
	}
	r, _ = fakeRunc(t, "container does not exist", "", 1)
	if _, err := r.State(ctx, "abc"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("state: got %v, want NotFound", err)
	}
	if err := r.Delete(ctx, "abc", true); err != nil {
		t.Fatalf("delete of a missing container: %v", err)
	}
	if err := r.Kill(ctx, "abc", syscall.SIGTERM, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("kill: got %v", err)
	}
	r, _ = fakeRunc(t, "", "", 2)
	if err := r.Kill(ctx, "abc", syscall.SIGTERM, false); err == nil || !strings.Contains(err.Error(), "runc kill abc: exit status 2") {
		t.Fatalf("kill without log message: got %v", err)
	}
}

func TestArgumentsAndOutput(t *testing.T) {
	ctx := context.Background()
	r, args := fakeRunc(t, "", `{"id":"abc","pid":42,"status":"running","bundle":"/b","created":"2024-01-02T03:04:05Z"}`, 0)
	st, err := r.State(ctx, "abc")
	if err != nil || st.ID != "abc" || st.Pid != 42 || st.Status != "running" || st.Created.Year() != 2024 {
		t.Fatalf("state: %+v %v", st, err)
	}
	if got := lastArgs(t, args); !strings.HasSuffix(got, "--log-format json --root "+r.Root+" state abc") {
		t.Fatalf("state args %q", got)
	}
	if err := r.Kill(ctx, "abc", syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	if got := lastArgs(t, args); !strings.HasSuffix(got, "kill --all abc 9") {
		t.Fatalf("kill args %q", got)
	}
	r, _ = fakeRunc(t, "", `null`, 0)
	if states, err := r.List(ctx); err != nil || len(states) != 0 {
		t.Fatalf("empty list: %v %v", states, err)
	}
}

func TestSystemdCgroupFlag(t *testing.T) {
	ctx := context.Background()
	r, args := fakeRunc(t, "", "", 0)
	if err := r.Update(ctx, "abc", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if got := lastArgs(t, args); strings.Contains(got, "--systemd-cgroup") {
		t.Fatalf("cgroupfs update args %q", got)
	}
	r.SystemdCgroup = true
	for _, run := range []func() error{
		func() error { return r.Update(ctx, "abc", []byte("{}")) },
		func() error { return r.Delete(ctx, "abc", true) },
	} {
		if err := run(); err != nil {
			t.Fatal(err)
		}
		if got := lastArgs(t, args); !strings.Contains(got, "--root "+r.Root+" --systemd-cgroup ") {
			t.Fatalf("systemd args %q: want the global flag before the command", got)
		}
	}
}

func TestRealRuncMissingContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/sbin/runc"); err != nil {
		t.Skip("runc not installed")
	}
	r := &Runc{Path: "/usr/sbin/runc", Root: t.TempDir()}
	ctx := context.Background()
	if _, err := r.State(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("state: got %v, want NotFound", err)
	}
	if err := r.Delete(ctx, "nope", false); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if states, err := r.List(ctx); err != nil || len(states) != 0 {
		t.Fatalf("list: %v %v", states, err)
	}
}
