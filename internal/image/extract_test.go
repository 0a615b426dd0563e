package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var testLimits = Limits{MaxEntrySize: 1 << 20, MaxLayerSize: 4 << 20, MaxEntries: 1000}

// tarOf builds a tar stream from headers; regular files get body as content.
func tarOf(t testing.TB, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		body := []byte(nil)
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			body = []byte("content of " + h.Name)
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}

func reg(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name} }
func dir(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755} }
func symlink(name, target string) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}
}
func hardlink(name, target string) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}
}

// sandbox is a temp dir holding the layer dir and an "outside" dir with a
// secret file; snapshot/unchanged prove nothing outside the layer changed.
type sandbox struct {
	top, layer, outside string
}

func newSandbox(t testing.TB) sandbox {
	return newSandboxIn(t, "")
}

// newSandboxIn creates the sandbox under base ("" → the default temp dir).
func newSandboxIn(t testing.TB, base string) sandbox {
	top, err := os.MkdirTemp(base, "berth-extract-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { must(t, removeTree(top)) })
	sb := sandbox{top: top, layer: filepath.Join(top, "layer"), outside: filepath.Join(top, "outside")}
	for _, d := range []string{sb.layer, sb.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sb.outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return sb
}

// unchanged reports what changed outside the layer dir.
func (sb sandbox) unchanged() error {
	for _, dir := range []string{sb.top, sb.outside} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		if len(entries) != 2 && dir == sb.top || len(entries) != 1 && dir == sb.outside {
			names := []string{}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return errors.New("unexpected entries in " + dir + ": " + filepathJoin(names))
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(sb.outside, "secret"), &st); err != nil {
		return err
	}
	data, _ := os.ReadFile(filepath.Join(sb.outside, "secret"))
	if string(data) != "secret" || st.Nlink != 1 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("outside/secret was modified or linked")
	}
	for _, p := range []string{"/pwned", "/abs-evil", "/evil"} {
		if _, err := os.Lstat(p); err == nil {
			return errors.New(p + " was created on the host")
		}
	}
	return nil
}

func filepathJoin(names []string) string {
	out := ""
	for _, n := range names {
		out += n + " "
	}
	return out
}

func isRoot() bool { return os.Geteuid() == 0 }

func TestExtractCraftedArchives(t *testing.T) {
	type check func(t *testing.T, sb sandbox)
	exists := func(rel string) check {
		return func(t *testing.T, sb sandbox) {
			if _, err := os.Lstat(filepath.Join(sb.layer, rel)); err != nil {
				t.Errorf("%s missing in layer: %v", rel, err)
			}
		}
	}
	cases := []struct {
		name     string
		entries  []*tar.Header
		needRoot bool
		wantErr  bool
		check    check
	}{
		{name: "dotdot traversal", entries: []*tar.Header{reg("../evil")}, wantErr: true},
		{name: "nested dotdot traversal", entries: []*tar.Header{reg("a/../../evil")}, wantErr: true},
		{name: "absolute path lands inside", entries: []*tar.Header{reg("/abs-evil")}, check: exists("abs-evil")},
		// A symlink is resolved as if the layer were "/": its target does
		// not exist in the layer, so writing through it is refused.
		{name: "absolute symlink then write through it", wantErr: true, entries: func() []*tar.Header {
			return nil // filled below: needs the sandbox path
		}()},
		{name: "relative symlink escape then write through it", wantErr: true,
			entries: []*tar.Header{symlink("esc", "../../../../../../../../tmp"), reg("esc/pwned-rel")}},
		{name: "symlinked parent planted deeper clamps at the layer root",
			entries: []*tar.Header{dir("d/"), symlink("d/up", "../.."), reg("d/up/pwned")}, check: exists("pwned")},
		{name: "symlink to a layer dir is followed inside",
			entries: []*tar.Header{dir("usr/lib/"), symlink("lib", "/usr/lib"), reg("lib/libc.so")}, check: exists("usr/lib/libc.so")},
		{name: "hard link to outside by dotdot", entries: []*tar.Header{hardlink("hl", "../outside/secret")}, wantErr: true},
		{name: "hard link to missing target", entries: []*tar.Header{hardlink("hl", "nothere")}, wantErr: true},
		{name: "hard link inside", entries: []*tar.Header{reg("f"), hardlink("hl", "f")}, check: func(t *testing.T, sb sandbox) {
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(sb.layer, "hl"), &st); err != nil || st.Nlink != 2 {
				t.Errorf("hl: nlink %d, %v", st.Nlink, err)
			}
		}},
		{name: "file replaces planted symlink", entries: []*tar.Header{symlink("f", "/tmp/pwned-f"), reg("f")},
			check: func(t *testing.T, sb sandbox) {
				fi, err := os.Lstat(filepath.Join(sb.layer, "f"))
				if err != nil || !fi.Mode().IsRegular() {
					t.Errorf("f is not a regular file: %v %v", fi, err)
				}
				if _, err := os.Lstat("/tmp/pwned-f"); err == nil {
					t.Error("/tmp/pwned-f written through symlink")
				}
			}},
		{name: "char device", needRoot: true, entries: []*tar.Header{{Typeflag: tar.TypeChar, Name: "dev/null", Devmajor: 1, Devminor: 3, Mode: 0o666}},
			check: func(t *testing.T, sb sandbox) {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(sb.layer, "dev/null"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
					t.Errorf("dev/null: mode %o rdev %d: %v", st.Mode, st.Rdev, err)
				}
			}},
		{name: "huge size header", entries: []*tar.Header{{Typeflag: tar.TypeReg, Name: "big", Size: 1 << 40}}, wantErr: true},
		{name: "whiteout of dotdot", needRoot: true, entries: []*tar.Header{reg("a/.wh..."), reg(".wh..")}, wantErr: true},
		{name: "whiteout escaping via symlink", needRoot: true,
			entries: []*tar.Header{symlink("esc", "../outside"), reg("esc/.wh.secret")}, wantErr: true},
		{name: "whiteout", needRoot: true, entries: []*tar.Header{dir("d/"), reg("d/.wh.gone")}, check: func(t *testing.T, sb sandbox) {
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(sb.layer, "d/gone"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
				t.Errorf("d/gone is not a 0/0 char device: mode %o: %v", st.Mode, err)
			}
		}},
		{name: "opaque dir", needRoot: true, entries: []*tar.Header{dir("d/"), reg("d/keep"), reg("d/.wh..wh..opq")}, check: func(t *testing.T, sb sandbox) {
			buf := make([]byte, 8)
			n, err := unix.Lgetxattr(filepath.Join(sb.layer, "d"), overlayOpaqueXattr, buf)
			if err != nil || string(buf[:n]) != "y" {
				t.Errorf("d: opaque xattr %q: %v", buf[:n], err)
			}
			if _, err := os.Lstat(filepath.Join(sb.layer, "d/.wh..wh..opq")); err == nil {
				t.Error("marker file was written")
			}
		}},
		{name: "forged overlay xattr dropped", needRoot: true, entries: []*tar.Header{{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o755,
			PAXRecords: map[string]string{"SCHILY.xattr.trusted.overlay.redirect": "/etc", "SCHILY.xattr.user.keep": "v"}}},
			check: func(t *testing.T, sb sandbox) {
				buf := make([]byte, 64)
				if _, err := unix.Lgetxattr(filepath.Join(sb.layer, "d"), "trusted.overlay.redirect", buf); err == nil {
					t.Error("trusted.overlay.redirect was set from the archive")
				}
			}},
		{name: "metadata kept", needRoot: true, entries: []*tar.Header{{Typeflag: tar.TypeReg, Name: "bin/su", Mode: 0o4755, Uid: 1234, Gid: 5678,
			ModTime: time.Unix(1234567890, 0)}, {Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o711, ModTime: time.Unix(1000000000, 0)}},
			check: func(t *testing.T, sb sandbox) {
				var st unix.Stat_t
				must(t, unix.Lstat(filepath.Join(sb.layer, "bin/su"), &st))
				if st.Mode&0o7777 != 0o4755 || st.Uid != 1234 || st.Gid != 5678 || st.Mtim.Sec != 1234567890 {
					t.Errorf("bin/su: mode %o owner %d:%d mtime %d", st.Mode&0o7777, st.Uid, st.Gid, st.Mtim.Sec)
				}
				must(t, unix.Lstat(filepath.Join(sb.layer, "bin"), &st))
				if st.Mode&0o7777 != 0o711 || st.Mtim.Sec != 1000000000 {
					t.Errorf("bin: mode %o mtime %d", st.Mode&0o7777, st.Mtim.Sec)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needRoot && !isRoot() {
				t.Skip("needs root")
			}
			sb := newSandbox(t)
			entries := c.entries
			if entries == nil { // absolute symlink to the real outside dir
				entries = []*tar.Header{symlink("esc", sb.outside), reg("esc/pwned"), reg("esc/secret")}
			}
			err := applyTar(bytes.NewReader(tarOf(t, entries...)), sb.layer, testLimits)
			if (err != nil) != c.wantErr {
				t.Fatalf("applyTar error = %v, want error %v", err, c.wantErr)
			}
			if err := sb.unchanged(); err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, sb)
			}
		})
	}
}

func TestExtractBoundsDecompressedSize(t *testing.T) {
	sb := newSandbox(t)
	// 3 MiB of zeros compresses to a few KiB; the layer limit is 1 MiB.
	data := tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "zeros", Size: 3 << 20})
	blob := filepath.Join(sb.top, "blob")
	if err := os.WriteFile(blob, gzipBytes(t, data), 0o600); err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxEntrySize: 8 << 20, MaxLayerSize: 1 << 20, MaxEntries: 10}
	err := unpackLayer(blob, sb.layer, "sha256:"+sha256HexOf(data), layerUnpack{lim: lim})
	if err == nil {
		t.Fatal("unpackLayer accepted a layer over the size limit")
	}
	os.Remove(blob)
	if err := sb.unchanged(); err != nil {
		t.Fatal(err)
	}
}

func TestUnpackLayerChecksDiffID(t *testing.T) {
	sb := newSandbox(t)
	data := tarOf(t, reg("f"))
	blob := filepath.Join(sb.top, "blob")
	must(t, os.WriteFile(blob, gzipBytes(t, data), 0o600))
	defer os.Remove(blob)
	if err := unpackLayer(blob, sb.layer, "sha256:"+sha256HexOf(data), layerUnpack{lim: testLimits}); err != nil {
		t.Fatalf("good diff id rejected: %v", err)
	}
	other := newSandbox(t)
	wrong := "sha256:" + sha256HexOf([]byte("other"))
	if err := unpackLayer(blob, other.layer, wrong, layerUnpack{lim: testLimits}); err == nil {
		t.Fatal("wrong diff id accepted")
	}
}
