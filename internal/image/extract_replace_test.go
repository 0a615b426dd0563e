package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// replaceArchives are valid layers where a later entry replaces an earlier
// one of another type; the last entry wins, as with GNU tar and containerd.
// The fuzz target seeds from them too.
func replaceArchives() map[string][]*tar.Header {
	old := time.Unix(1e9, 0)
	d := func(name string) *tar.Header {
		h := dir(name)
		h.ModTime = old
		return h
	}
	return map[string][]*tar.Header{
		"dir tree replaced by file":    {d("d/"), d("d/sub/"), reg("d")},
		"dir tree replaced by symlink": {d("d/"), d("d/sub/"), symlink("d", "target")},
		"dir tree replaced by symlink to an existing dir": {d("x/"), d("x/sub/"), d("d/"), d("d/sub/"),
			symlink("d", "x")},
		"file replaced by dir tree": {reg("d"), d("d/"), d("d/sub/")},
	}
}

func TestExtractLastEntryReplacesAnotherType(t *testing.T) {
	wantType := map[string]os.FileMode{
		"dir tree replaced by file":                       0,
		"dir tree replaced by symlink":                    os.ModeSymlink,
		"dir tree replaced by symlink to an existing dir": os.ModeSymlink,
		"file replaced by dir tree":                       os.ModeDir,
	}
	for name, entries := range replaceArchives() {
		t.Run(name, func(t *testing.T) {
			sb := newSandbox(t)
			if err := applyTar(bytes.NewReader(tarOf(t, entries...)), sb.layer, testLimits); err != nil {
				t.Fatalf("valid archive refused: %v", err)
			}
			if err := sb.unchanged(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(filepath.Join(sb.layer, "d"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != wantType[name] {
				t.Errorf("d is %v, want type %v", fi.Mode().Type(), wantType[name])
			}
			if wantType[name] == os.ModeDir {
				sub, err := os.Lstat(filepath.Join(sb.layer, "d/sub"))
				if err != nil || !sub.IsDir() || !sub.ModTime().Equal(time.Unix(1e9, 0)) {
					t.Errorf("d/sub: %v, %v; want a dir with the archive's mtime", sub, err)
				}
			}
			// The replaced dir's times must not land on whatever took
			// its place or on a dir reached through it.
			if name == "dir tree replaced by symlink to an existing dir" {
				fi, _ := os.Lstat(filepath.Join(sb.layer, "d"))
				if fi.ModTime().Equal(time.Unix(1e9, 0)) {
					t.Error("symlink d got the replaced dir's mtime")
				}
			}
		})
	}
}
