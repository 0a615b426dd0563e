package crilog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// target is a file standing for /etc/profile.d/x.sh: a container that can
// write the log directory links the log to it.
func target(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.sh")
	if err := os.WriteFile(p, []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkUntouched(t *testing.T, path string) {
	t.Helper()
	if data, err := os.ReadFile(path); err != nil || string(data) != "untouched\n" {
		t.Errorf("%s: %q, %v; want it untouched", path, data, err)
	}
}

func TestOpenRefusesAPlantedLogSymlink(t *testing.T) {
	dir, victim := t.TempDir(), target(t)
	if err := os.Mkdir(filepath.Join(dir, "app"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "app", "1.log")); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, "app/1.log")
	if err == nil {
		_ = w.WriteRecord(Stdout, false, []byte("echo owned")) // what a followed link would receive
		w.Close()
		t.Fatal("Open followed a symlink planted at the log's path")
	}
	if !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), "app/1.log") {
		t.Errorf("error %q does not name the log and say it is a symlink", err)
	}
	checkUntouched(t, victim)
}

func TestReopenRefusesASymlinkPlantedAfterRotation(t *testing.T) {
	dir, victim := t.TempDir(), target(t)
	w, err := Open(dir, "app/1.log")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	log := filepath.Join(dir, "app", "1.log")
	if err := os.Rename(log, log+".1"); err != nil { // rotation
		t.Fatal(err)
	}
	if err := os.Symlink(victim, log); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Reopen over a planted symlink: %v; want refused, saying symlink", err)
	}
	if err := w.WriteRecord(Stdout, false, []byte("after")); err != nil {
		t.Fatal(err)
	}
	checkUntouched(t, victim)
	check(t, readAll(t, log+".1"), []want{{Stdout, false, "after"}}) // the file it had
}

func TestOpenRefusesADirectorySymlink(t *testing.T) {
	dir, etc := t.TempDir(), t.TempDir()
	if err := os.Symlink(etc, filepath.Join(dir, "app")); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(dir, "app/1.log"); err == nil || !strings.Contains(err.Error(), "symlink") {
		if w != nil {
			w.Close()
		}
		t.Errorf("Open through app -> %s: %v; want refused, saying symlink", etc, err)
	}
	if names, _ := os.ReadDir(etc); len(names) != 0 {
		t.Errorf("Open made %v in the symlink's target", names)
	}
	pods := t.TempDir()
	if err := os.Symlink(etc, filepath.Join(pods, "ns_pod_uid")); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(filepath.Join(pods, "ns_pod_uid"), "app/1.log"); err == nil || !strings.Contains(err.Error(), "symlink") {
		if w != nil {
			w.Close()
		}
		t.Errorf("Open of a pod log directory that is a symlink: %v; want refused, saying symlink", err)
	}
	if names, _ := os.ReadDir(etc); len(names) != 0 {
		t.Errorf("Open made %v in the symlink's target", names)
	}
}

func TestOpenRefusesWhatIsNotAPlainLog(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "fifo.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := target(t)
	if err := os.Link(victim, filepath.Join(dir, "linked.log")); err != nil {
		t.Fatal(err)
	}
	rels := []string{"fifo.log", "linked.log", "../escape.log", "/abs.log", "a/../b.log"}
	if os.Geteuid() == 0 { // a character device (/dev/null's numbers): refused without being opened
		if err := unix.Mknod(filepath.Join(dir, "dev.log"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, "dev.log")
	}
	for _, rel := range rels {
		if w, err := Open(dir, rel); err == nil {
			w.Close()
			t.Errorf("Open(%q) succeeded; want refused", rel)
		}
	}
	checkUntouched(t, victim)
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.log")); err == nil {
		t.Errorf("Open made a log outside the directory")
	}
}

func TestAbandonRemovesOnlyWhatOpenCreated(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "app/0.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Abandon(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "app", "0.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the log Open created is still there after Abandon: %v", err)
	}
	kept := filepath.Join(dir, "app", "1.log")
	if err := os.WriteFile(kept, []byte("older\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	w, err = Open(dir, "app/1.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Abandon(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(kept); err != nil || string(data) != "older\n" {
		t.Errorf("Abandon touched a log it did not create: %q, %v", data, err)
	}
}
