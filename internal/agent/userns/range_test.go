package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// subIDFiles writes subuid and subgid files with the given contents ("-"
// for none) and returns their paths.
func subIDFiles(t *testing.T, subuid, subgid string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	paths := [2]string{filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")}
	for i, content := range []string{subuid, subgid} {
		if content == "-" {
			continue
		}
		if err := os.WriteFile(paths[i], []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths[0], paths[1]
}

func TestReadRange(t *testing.T) {
	def := DefaultRange()
	if def.First != 65536 || def.Length != 4294901760 || def.Length%BlockLength != 0 {
		t.Fatalf("DefaultRange %+v; want 65536 and 2^32-65536", def)
	}
	for _, tc := range []struct {
		name, subuid, subgid string
		first, length        uint32
	}{
		{"no files", "-", "-", def.First, def.Length},
		{"no entry for berth", "alice:100000:65536\n", "alice:100000:65536\n", def.First, def.Length},
		{"berth's entry", "alice:100000:65536\nberth:1048576:7208960\n", "berth:1048576:7208960\n", 1048576, 7208960},
		{"blank lines and spaces", "\n  berth:131072:7208960  \n\n", "berth:131072:7208960", 131072, 7208960},
	} {
		uids, gids := subIDFiles(t, tc.subuid, tc.subgid)
		r, err := ReadRange(uids, gids, "berth", 110)
		if err != nil || r.First != tc.first || r.Length != tc.length {
			t.Errorf("%s: %+v, %v; want %d:%d", tc.name, r, err, tc.first, tc.length)
		}
	}
}

func TestReadRangeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, subuid, subgid, want string
	}{
		{"only in subuid", "berth:65536:7208960\n", "-", "only one of"},
		{"only in subgid", "alice:1:2\n", "berth:65536:7208960\n", "only one of"},
		{"different ranges", "berth:65536:7208960\n", "berth:131072:7208960\n", "must agree"},
		{"two entries", "berth:65536:7208960\nberth:8000000:65536\n", "berth:65536:7208960\n", "more than one entry"},
		{"two fields", "berth:65536\n", "berth:65536:7208960\n", "subuid:1: \"berth:65536\": want name:start:count"},
		{"not a number", "berth:x:7208960\n", "berth:x:7208960\n", "subuid:1"},
		{"negative count", "berth:65536:-1\n", "berth:65536:-1\n", "count"},
		{"unaligned first", "berth:100000:7208960\n", "berth:100000:7208960\n", "first id 100000 is not a multiple of 65536"},
		{"first id 0", "berth:0:7208960\n", "berth:0:7208960\n", "below 65536"},
		{"unaligned length", "berth:65536:100000\n", "berth:65536:100000\n", "length 100000 is not a positive multiple"},
		{"zero length", "berth:65536:0\n", "berth:65536:0\n", "count > 0"},
		{"past 2^32", "berth:4294901760:131072\n", "berth:4294901760:131072\n", "must be 32-bit ids"},
		{"too few for max pods", "berth:65536:655360\n", "berth:65536:655360\n", "10 blocks of 65536, fewer than the node's 110 max pods"},
	} {
		uids, gids := subIDFiles(t, tc.subuid, tc.subgid)
		r, err := ReadRange(uids, gids, "berth", 110)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error saying %q", tc.name, r, err, tc.want)
		}
	}
}

func TestReadRangeUnreadableFile(t *testing.T) {
	dir := t.TempDir() // a directory cannot be read as a file
	if _, err := ReadRange(dir, dir, "berth", 0); err == nil {
		t.Error("a directory as the subuid file accepted")
	}
}

func TestRangeString(t *testing.T) {
	if got := DefaultRange().String(); got != "65536-4294967295 (kubelet's default)" {
		t.Errorf("String: %q", got)
	}
}
