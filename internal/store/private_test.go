package store

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMkdirPrivate(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	older := filepath.Join(base, "older")
	moved := filepath.Join(base, "moved")
	for _, d := range []string{older, moved} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An admin's /var/lib/berth → /data/berth.
	link := filepath.Join(base, "link")
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir     string
		wantErr bool
	}{{fresh, false}, {older, false}, {link, false}, {file, true}} {
		err := MkdirPrivate(tc.dir)
		if (err != nil) != tc.wantErr {
			t.Errorf("MkdirPrivate(%s): %v, want error %v", tc.dir, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		info, err := os.Stat(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != PrivateDirMode {
			t.Errorf("%s: mode %o, want %o", tc.dir, got, PrivateDirMode)
		}
	}
}
