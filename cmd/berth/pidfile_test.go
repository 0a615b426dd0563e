package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestPidFileReplacesAStaleOneAndIsRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, pidFileName)
	if err := os.WriteFile(path, []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	remove, err := writePidFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("pid file holds %q, %v; want %d", b, err, os.Getpid())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("pid file mode: %v, %v; want 0600", fi, err)
	}
	remove()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pid file after remove: %v; want it gone", err)
	}
}
