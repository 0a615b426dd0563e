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

// TestWriteFileVolatileReplacesKeepsModeAndDoesNotSync: the volatile writer
// replaces the content whole, sets the mode, leaves no temporary file and
// makes no fsync; the durable one makes two (file, directory).
func TestWriteFileVolatileReplacesKeepsModeAndDoesNotSync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFileVolatile(path, []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := Fsyncs()
	if err := WriteFileVolatile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := Fsyncs() - before; n != 0 {
		t.Errorf("volatile write made %d fsyncs, want 0", n)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content = %q, %v; want new", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != "f" {
		t.Errorf("directory holds %v, want only f", names)
	}
	before = Fsyncs()
	if err := WriteFileAtomic(path, []byte("durable"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := Fsyncs() - before; n != 2 {
		t.Errorf("durable write made %d fsyncs, want 2", n)
	}
}

// TestWriteFileVolatileReplacesByRename: a reader holding the old file
// keeps reading the old content whole: the new one is a new inode renamed
// over the name, never a rewrite in place.
func TestWriteFileVolatileReplacesByRename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFileVolatile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteFileVolatile(path, []byte("new!"), 0o600); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := f.Read(buf)
	if string(buf[:n]) != "old" {
		t.Errorf("open reader read %q, want old", buf[:n])
	}
}

func TestWriteFileVolatileFailedRenameRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileVolatile(target, []byte("x"), 0o600); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded")
	}
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != "target" {
		t.Errorf("directory holds %v, want only target", names)
	}
	if err := WriteFileVolatile(filepath.Join(dir, "absent", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestUpdateJSONRoundTripAndEncodeError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := SaveJSON(path, testRecord{Version: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before := Fsyncs()
	if err := UpdateJSON(path, testRecord{Version: 1, Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if n := Fsyncs() - before; n != 1 {
		t.Errorf("UpdateJSON made %d fsyncs, want 1 (the file, not the directory)", n)
	}
	var got testRecord
	if err := LoadJSON(path, &got); err != nil || got.Name != "b" {
		t.Fatalf("loaded %+v, %v; want name b", got, err)
	}
	if err := UpdateJSON(path, unencodable{Version: 1, C: make(chan int)}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("unencodable value: error %v, want one naming %s", err, path)
	}
	if err := LoadJSON(path, &got); err != nil || got.Name != "b" {
		t.Errorf("after a failed save: %+v, %v; want name b kept", got, err)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode().Perm())
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only rec.json", names)
	}
}
