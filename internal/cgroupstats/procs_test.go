package cgroupstats

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeProc writes /proc/<pid>/fd of each process, with the given link
// targets, and /proc/<pid>/limits.
func fakeProc(t *testing.T, procs map[int][]string, limits string) string {
	t.Helper()
	proc := t.TempDir()
	for pid, targets := range procs {
		fd := filepath.Join(proc, strconv.Itoa(pid), "fd")
		if err := os.MkdirAll(fd, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, target := range targets {
			if err := os.Symlink(target, filepath.Join(fd, strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		writeFiles(t, filepath.Join(proc, strconv.Itoa(pid)), map[string]string{"limits": limits})
	}
	return proc
}

const limitsFile = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max processes             63457                63457                processes
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`

func TestProcessesV2(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "pod/c1"), map[string]string{"cgroup.procs": "10\n11\n12\n"})
	proc := fakeProc(t, map[int][]string{
		10: {"/dev/null", "socket:[4711]", "pipe:[9]"},
		11: {"socket:[4712]", "socket:[4713]"},
		// 12 exited between cgroup.procs and /proc: counted, without fds.
	}, limitsFile)
	p, err := Reader{Root: root, Unified: true, Proc: proc}.Processes("/pod/c1", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := Processes{Count: 3, FDs: 5, Sockets: 3, MaxOpenFiles: 1024, HasMaxOpenFiles: true}
	if p != want {
		t.Errorf("processes = %+v\nwant        %+v", p, want)
	}
}

// On v1 the list comes from the cpu controller, or the next one that has it.
func TestProcessesV1(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "pids/pod/c1"), map[string]string{"cgroup.procs": "10\n"})
	proc := fakeProc(t, map[int][]string{10: {"socket:[1]"}}, "Max open files            unlimited            unlimited            files\n")
	p, err := Reader{Root: root, Proc: proc}.Processes("/pod/c1", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := Processes{Count: 1, FDs: 1, Sockets: 1, HasMaxOpenFiles: true}
	if p != want {
		t.Errorf("processes = %+v\nwant        %+v", p, want)
	}
}

func TestProcessesOfMissingCgroupAreNone(t *testing.T) {
	p, err := Reader{Root: t.TempDir(), Unified: true, Proc: t.TempDir()}.Processes("/gone", 0)
	if err != nil || p != (Processes{}) {
		t.Errorf("processes = %+v, %v; want none, no error", p, err)
	}
}

func TestProcessesStopAtTheirBounds(t *testing.T) {
	defer func(procs, links int) { maxScannedProcs, maxReadLinks = procs, links }(maxScannedProcs, maxReadLinks)
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "c1"), map[string]string{"cgroup.procs": "1\n2\n3\n"})
	socks := []string{"socket:[1]", "socket:[2]", "socket:[3]"}
	proc := fakeProc(t, map[int][]string{1: socks, 2: socks, 3: socks}, "")
	r := Reader{Root: root, Unified: true, Proc: proc}

	maxScannedProcs, maxReadLinks = 2, 100
	p, _ := r.Processes("/c1", 0)
	if p.Count != 3 || p.FDs != 6 || p.Sockets != 6 || !p.Partial {
		t.Errorf("2 processes scanned: %+v; want count 3, 6 fds, 6 sockets, partial", p)
	}
	maxScannedProcs, maxReadLinks = 100, 4
	p, _ = r.Processes("/c1", 0)
	if p.FDs != 9 || p.Sockets != 4 || !p.Partial {
		t.Errorf("4 links read: %+v; want 9 fds (listing goes on), 4 sockets, partial", p)
	}
}
