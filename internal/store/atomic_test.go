package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

type testRecord struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
}

type unencodable struct {
	Version int
	C       chan int
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomicReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFileAtomic(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content = %q, %v; want new", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != "f" {
		t.Errorf("directory holds %v, want only f", names)
	}
}

func TestWriteFileAtomicMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "f")
	if err := WriteFileAtomic(path, []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestSaveJSONEncodeErrorKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := SaveJSON(path, testRecord{Version: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	err := SaveJSON(path, unencodable{Version: 1, C: make(chan int)})
	if err == nil {
		t.Fatal("saving an unencodable value succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Errorf("content changed to %q after a failed save", after)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only rec.json", names)
	}
}

func TestSaveLoadJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	want := testRecord{Version: 3, Name: "pod-a"}
	if err := SaveJSON(path, want); err != nil {
		t.Fatal(err)
	}
	var got testRecord
	if err := LoadJSON(path, &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("loaded %+v, want %+v", got, want)
	}
}

func TestLoadJSONMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.json")
	var r testRecord
	err := LoadJSON(path, &r)
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestLoadJSONCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	if err := os.WriteFile(path, []byte(`{"version": 1, "name": `), 0o600); err != nil {
		t.Fatal(err)
	}
	var r testRecord
	err := LoadJSON(path, &r)
	if err == nil {
		t.Fatal("corrupt record loaded")
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("corrupt record reported as NotFound: %v", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestWriteFileAtomicFailedRenameRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(target, []byte("x"), 0o600); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded")
	}
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != "target" {
		t.Errorf("directory holds %v, want only target", names)
	}
}
