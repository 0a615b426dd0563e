package image

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestMountRootfsStacksLayersAndWhiteouts(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root")
	}
	top := t.TempDir()
	low1, low2 := filepath.Join(top, "l1"), filepath.Join(top, "l2")
	for _, d := range []string{low1, low2} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, applyTar(bytes.NewReader(tarOf(t, dir("d/"), reg("d/old"), reg("a"), reg("b"))), low1, testLimits))
	must(t, applyTar(bytes.NewReader(tarOf(t, reg(".wh.b"), dir("d/"), reg("d/.wh..wh..opq"), reg("d/new"), reg("c"))), low2, testLimits))
	target := filepath.Join(top, "rootfs")
	upper, work := filepath.Join(top, "upper"), filepath.Join(top, "work")
	must(t, MountRootfs([]string{low1, low2}, upper, work, target, nil))
	t.Cleanup(func() { must(t, UnmountRootfs(target)) })

	for rel, want := range map[string]bool{"a": true, "b": false, "c": true, "d/old": false, "d/new": true} {
		if _, err := os.Lstat(filepath.Join(target, rel)); (err == nil) != want {
			t.Errorf("%s: present=%v, want %v", rel, err == nil, want)
		}
	}
	must(t, os.WriteFile(filepath.Join(target, "written"), []byte("x"), 0o644))
	if _, err := os.Stat(filepath.Join(upper, "written")); err != nil {
		t.Errorf("write did not land in upper: %v", err)
	}
	must(t, UnmountRootfs(target))
	if _, err := os.Stat(filepath.Join(target, "a")); err == nil {
		t.Error("target still shows the overlay after unmount")
	}
	must(t, UnmountRootfs(target))                        // not mounted
	must(t, UnmountRootfs(filepath.Join(top, "missing"))) // missing
}

func TestMountRootfsRejectsBadInput(t *testing.T) {
	top := t.TempDir()
	err := MountRootfs(nil, filepath.Join(top, "u"), filepath.Join(top, "w"), filepath.Join(top, "t"), nil)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("no layers: %v", err)
	}
	err = MountRootfs([]string{"/a:b"}, filepath.Join(top, "u"), filepath.Join(top, "w"), filepath.Join(top, "t"), nil)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("colon in layer path: %v", err)
	}
	long := make([]string, 100)
	for i := range long {
		long[i] = filepath.Join(top, "layers", string(bytes.Repeat([]byte{'a' + byte(i%26)}, 64)))
	}
	err = MountRootfs(long, filepath.Join(top, "u"), filepath.Join(top, "w"), filepath.Join(top, "t"), nil)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("options over a page: %v", err)
	}
}
