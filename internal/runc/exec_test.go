package runc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestParseStatPPID(t *testing.T) {
	ppid, ok := parseStatPPID([]byte("42 (a) b) (c) S 7 42 42 0 -1 4194560"))
	if !ok || ppid != 7 {
		t.Errorf("parseStatPPID = %d, %v; want 7 (a command name holding \") \")", ppid, ok)
	}
	if _, ok := parseStatPPID([]byte("42 (truncated")); ok {
		t.Error("parseStatPPID accepted a stat line without ')'")
	}
}

func TestDescendants(t *testing.T) {
	parents := map[int]int{10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
	got := descendants(10, parents)
	sort.Ints(got)
	if want := []int{11, 12, 13}; !reflect.DeepEqual(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
}

func TestExecReportsExitCodeAndRuncErrors(t *testing.T) {
	r, argsFile := fakeRunc(t, "", "", 3)
	exe, err := r.StartExec("abc", ExecOpts{Process: []byte(`{"args":["true"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	code, err := exe.Wait()
	if err != nil || code != 3 {
		t.Errorf("Wait = %d, %v; want 3, nil", code, err)
	}
	if args := lastArgs(t, argsFile); !strings.Contains(args, "exec --process") || !strings.HasSuffix(args, " abc") {
		t.Errorf("runc args = %q", args)
	}

	r, _ = fakeRunc(t, "container does not exist", "", 1)
	exe, err = r.StartExec("abc", ExecOpts{Process: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exe.Wait(); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Wait of a missing container: %v, want NotFound", err)
	}
	if _, err := r.StartExec("abc", ExecOpts{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("StartExec without a process: %v, want InvalidArgument", err)
	}
}

// TestKillTreeReachesGrandchildren starts sh, which starts a background
// sleep: killing the tree from sh must kill the sleep too.
func TestKillTreeReachesGrandchildren(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	var child int
	if _, err := fmt.Sscan(strings.TrimSpace(string(buf[:n])), &child); err != nil || child <= 0 {
		_ = cmd.Process.Kill() // failing anyway
		_ = cmd.Wait()
		t.Fatalf("background pid %q: %v", buf[:n], err)
	}
	killTree(cmd.Process.Pid)
	_ = cmd.Wait() // killed
	// SIGKILL is delivered asynchronously: give the sleep a moment to die.
	statPath := fmt.Sprintf("/proc/%d/stat", child)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(statPath)
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("background sleep %d survived killTree: %s", child, stat)
		}
	}
}
