package logrotate

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// OpenLog reads a log beneath the root and nothing a container planted
// in its place: a symlink (of the log or of its directory), a FIFO, a
// path outside the root.
func TestOpenLogFollowsNoSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(root, "ns_pod_uid", "app")
	if err := os.MkdirAll(app, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "0.log"), []byte("line\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := OpenLog(root, filepath.Join(app, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if string(data) != "line\n" {
		t.Errorf("the log reads %q", data)
	}
	if err := os.Symlink(secret, filepath.Join(app, "1.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "ns_pod_uid", "linked")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(app, "2.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		filepath.Join(app, "1.log"),
		filepath.Join(root, "ns_pod_uid", "linked", "shadow"),
		filepath.Join(app, "2.log"),
		secret,
	} {
		if f, err := OpenLog(root, path); err == nil {
			f.Close()
			t.Errorf("OpenLog(%s) succeeded; want refused", path)
		}
	}
}
