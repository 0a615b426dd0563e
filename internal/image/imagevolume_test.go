package image

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestMountImageVolumeIsReadOnlyAndStacksLayers(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root")
	}
	top := t.TempDir()
	low1, low2 := filepath.Join(top, "l1"), filepath.Join(top, "l2")
	for _, d := range []string{low1, low2} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, applyTar(bytes.NewReader(tarOf(t, reg("a"), reg("b"))), low1, testLimits))
	must(t, applyTar(bytes.NewReader(tarOf(t, reg(".wh.b"), reg("c"))), low2, testLimits))
	target, empty := filepath.Join(top, "vol", "0"), filepath.Join(top, "vol", "empty")
	for name, layers := range map[string][]string{"two layers": {low1, low2}, "one layer": {low1}} {
		must(t, MountImageVolume(layers, empty, target, nil))
		var st unix.Statfs_t
		must(t, unix.Statfs(target, &st))
		for flag, opt := range map[int64]string{unix.ST_RDONLY: "ro", unix.ST_NOSUID: "nosuid", unix.ST_NODEV: "nodev"} {
			if st.Flags&flag == 0 {
				t.Errorf("%s: mount flags %#x lack %s", name, st.Flags, opt)
			}
		}
		if st.Flags&unix.ST_NOEXEC != 0 {
			t.Errorf("%s: mount flags %#x have noexec", name, st.Flags)
		}
		if _, err := os.Stat(filepath.Join(target, "a")); err != nil {
			t.Errorf("%s: a: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o644); !errors.Is(err, unix.EROFS) {
			t.Errorf("%s: write: %v, want EROFS", name, err)
		}
		must(t, UnmountImageVolume(target))
	}
	must(t, MountImageVolume([]string{low1, low2}, empty, target, nil))
	for rel, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, err := os.Lstat(filepath.Join(target, rel)); (err == nil) != want {
			t.Errorf("%s: present=%v, want %v", rel, err == nil, want)
		}
	}
	must(t, UnmountImageVolume(target))
	must(t, UnmountImageVolume(target))                        // not mounted
	must(t, UnmountImageVolume(filepath.Join(top, "missing"))) // missing
}

func TestMountImageVolumeRejectsBadInput(t *testing.T) {
	top := t.TempDir()
	empty, target := filepath.Join(top, "empty"), filepath.Join(top, "t")
	for name, layers := range map[string][]string{
		"no layers": nil, "colon": {"/a:b"}, "comma": {"/a,upperdir=/x"}, "relative": {"layers/a"},
	} {
		if err := MountImageVolume(layers, empty, target, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	must(t, os.MkdirAll(empty, 0o755))
	must(t, os.WriteFile(filepath.Join(empty, "stray"), nil, 0o644))
	if err := MountImageVolume([]string{top}, empty, target, nil); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("bottom dir not empty: %v, want FailedPrecondition", err)
	}
}

// TestResolveSubPath resolves on a plain directory tree: what openat2
// refuses does not depend on a mount.
func TestResolveSubPath(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "etc", "app"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc", "app", "conf"), []byte("x"), 0o644))
	for name, target := range map[string]string{
		"inside": "etc/app", "absolute": "/etc", "climbing": "../../..", "loop": "loop", "proc": "/proc/self/root",
	} {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	realRoot, err := filepath.EvalSymlinks(root)
	must(t, err)
	for _, tc := range []struct {
		sub, want string
		class     error
	}{
		{sub: "", want: root},
		{sub: ".", want: root},
		{sub: "etc/app", want: filepath.Join(realRoot, "etc", "app")},
		{sub: "etc/app/conf", want: filepath.Join(realRoot, "etc", "app", "conf")},
		{sub: "inside/conf", want: filepath.Join(realRoot, "etc", "app", "conf")},
		{sub: "missing", class: errdefs.ErrNotFound},
		{sub: "etc/app/conf/below", class: errdefs.ErrNotFound},
		{sub: "absolute", class: errdefs.ErrInvalidArgument},
		{sub: "absolute/passwd", class: errdefs.ErrInvalidArgument},
		{sub: "climbing", class: errdefs.ErrInvalidArgument},
		{sub: "loop", class: errdefs.ErrInvalidArgument},
		{sub: "proc", class: errdefs.ErrInvalidArgument},
		{sub: "../etc", class: errdefs.ErrInvalidArgument},
		{sub: "etc/../../x", class: errdefs.ErrInvalidArgument},
		{sub: "/etc", class: errdefs.ErrInvalidArgument},
	} {
		got, err := ResolveSubPath(root, tc.sub)
		switch {
		case tc.class != nil && !errors.Is(err, tc.class):
			t.Errorf("ResolveSubPath(%q) = %q, %v; want %v", tc.sub, got, err, tc.class)
		case tc.class == nil && (err != nil || got != tc.want):
			t.Errorf("ResolveSubPath(%q) = %q, %v; want %q", tc.sub, got, err, tc.want)
		}
	}
}
