package image

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/test/testimage"
)

// importTwo imports two images that share a base layer and differ in
// their top one; it returns the store and both images.
func importTwo(t *testing.T) (*Store, Image, Image) {
	t.Helper()
	s := openTestStore(t)
	tmp := t.TempDir()
	var imgs []Image
	for _, name := range []string{"keep", "bad"} {
		p := filepath.Join(tmp, name)
		must(t, testimage.WriteLayout(p, testimage.Options{Name: name + ":1", ExtraFiles: map[string]string{"/" + name: name}}))
		got, err := s.Import(context.Background(), p)
		must(t, err)
		imgs = append(imgs, got[0])
	}
	return s, imgs[0], imgs[1]
}

func recordPath(s *Store, img Image) string {
	return filepath.Join(s.indexDir(), strings.TrimPrefix(img.ID, digestPrefix)+".json")
}

// assertStored fails unless every blob and unpacked layer of img is present.
func assertStored(t *testing.T, s *Store, img Image) {
	t.Helper()
	for _, l := range img.Layers {
		b, _ := digestHex(l.Digest)
		c, _ := digestHex(l.ChainID)
		if !fileExists(s.blobPath(b)) {
			t.Errorf("blob %s of %s was deleted", l.Digest, img.ID)
		}
		if _, err := os.Lstat(s.layerPath(c)); err != nil {
			t.Errorf("layer %s of %s was deleted: %v", l.ChainID, img.ID, err)
		}
	}
	id, _ := digestHex(img.ID)
	if !fileExists(s.blobPath(id)) {
		t.Errorf("config blob of %s was deleted", img.ID)
	}
}

func TestCorruptRecordIsSkippedThenSetAside(t *testing.T) {
	corruptions := map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"future version": func(b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m["version"] = recordVersion + 1
			out, _ := json.Marshal(m)
			return out
		},
		"id not its file name": func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"id":"sha256:`, `"id":"sha256:0`, 1))
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			s, keep, bad := importTwo(t)
			orig, err := os.ReadFile(recordPath(s, bad))
			must(t, err)
			must(t, os.WriteFile(recordPath(s, bad), corrupt(orig), 0o600))
			must(t, s.bumpGeneration())

			// Readers (this process and another) skip it and go on.
			other, err := Open(s.Root())
			must(t, err)
			for _, r := range []*Store{s, other} {
				imgs, err := r.List()
				if err != nil || len(imgs) != 1 || imgs[0].ID != keep.ID {
					t.Fatalf("List = %v, %v; want only %s", imgs, err, keep.ID)
				}
				if _, err := r.Resolve("keep:1"); err != nil {
					t.Fatalf("Resolve of the good image: %v", err)
				}
				q, err := r.Quarantined()
				if err != nil || len(q) != 1 || q[0].Path != recordPath(s, bad) || q[0].Reason == "" {
					t.Fatalf("Quarantined = %+v, %v; want the bad record, still in index/", q, err)
				}
			}
			if _, err := os.Stat(recordPath(s, bad)); err != nil {
				t.Fatalf("a reader moved or removed the record: %v", err)
			}

			// The next write sets it aside; what it referenced stays.
			must(t, s.Remove(keep.ID))
			q, err := other.Quarantined()
			if err != nil || len(q) != 1 || !strings.HasPrefix(q[0].Path, s.quarantineDir()+"/") ||
				q[0].Source != recordPath(s, bad) || q[0].Time.IsZero() {
				t.Fatalf("Quarantined after a write = %+v, %v; want it under quarantine/", q, err)
			}
			if data, err := os.ReadFile(q[0].Path); err != nil || string(data) != string(corrupt(orig)) {
				t.Fatalf("set-aside record changed: %v", err)
			}
			if _, err := os.Stat(recordPath(s, bad)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("record still in index/: %v", err)
			}
			assertStored(t, s, bad)
			if imgs, err := s.List(); err != nil || len(imgs) != 0 {
				t.Fatalf("List after remove = %v, %v", imgs, err)
			}
		})
	}
}

func TestGCKeepsOnlyWhatQuarantinedRecordNames(t *testing.T) {
	s, keep, bad := importTwo(t)
	orig, err := os.ReadFile(recordPath(s, bad))
	must(t, err)
	// Valid JSON of a future version: its references are readable.
	future := strings.Replace(string(orig), `"version":1`, `"version":99`, 1)
	must(t, os.WriteFile(recordPath(s, bad), []byte(future), 0o600))
	must(t, s.Remove(keep.ID))
	assertStored(t, s, bad)
	top := keep.Layers[len(keep.Layers)-1]
	c, _ := digestHex(top.ChainID)
	if _, err := os.Lstat(s.layerPath(c)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed image's own layer was kept: %v", err)
	}
}

// A record that cannot be read at all (here a directory in its place) is
// skipped and left where it is, and garbage collection deletes nothing
// while it is there.
func TestUnreadableRecordIsLeftInPlace(t *testing.T) {
	s, keep, bad := importTwo(t)
	must(t, os.Remove(recordPath(s, bad)))
	must(t, os.Mkdir(recordPath(s, bad), 0o700))
	must(t, s.bumpGeneration())
	must(t, s.Remove(keep.ID))
	q, err := s.Quarantined()
	if err != nil || len(q) != 1 || q[0].Path != recordPath(s, bad) || !strings.Contains(q[0].Reason, "read") {
		t.Fatalf("Quarantined = %+v, %v; want the unreadable record, in index/", q, err)
	}
	if fi, err := os.Stat(recordPath(s, bad)); err != nil || !fi.IsDir() {
		t.Fatalf("unreadable record was moved: %v", err)
	}
	assertStored(t, s, keep)
	assertStored(t, s, bad)
}
