package unixsock

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestListenGivesTheModeBeforeThePathExists(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "api.sock")
	l, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&os.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want a socket with 0600", info.Mode())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the socket (the private directory is gone)", len(entries))
	}
	if got := l.Addr().String(); got != path {
		t.Errorf("Addr %q, want %q", got, path)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.Close()
}

func TestListenRefusesAnExistingPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Listen over a file: %v, want ErrExist", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "keep" {
		t.Errorf("the existing file was changed: %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%d entries left, want 1", len(entries))
	}
}

func TestCloseRemovesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	l, err := Listen(path, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	if err := l.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
}
