package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// trustedBase is a fresh directory the checks accept (t.TempDir's parents
// are root's or ours, /tmp being sticky).
func trustedBase(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrustedDir(base); err != nil {
		t.Skipf("the temporary directory is not trusted here: %v", err)
	}
	return base
}

func TestCheckTrustedDir(t *testing.T) {
	base := trustedBase(t)
	mkdir := func(name string, mode os.FileMode) string {
		path := filepath.Join(base, name)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := mkdir("good/pods", 0o755)
	worldWritable := mkdir("ww", 0o777)
	groupWritable := mkdir("gw", 0o775)
	sticky := mkdir("sticky", os.ModeSticky|0o777)
	underWritable := mkdir("open/pods", 0o755)
	if err := os.Chmod(filepath.Dir(underWritable), 0o777); err != nil {
		t.Fatal(err)
	}
	underSticky := mkdir("sticky/pods", 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{good, ""},
		{underSticky, ""}, // a sticky parent owned by root (or us) is fine
		{worldWritable, "has mode 0777: writable by group or others"},
		{groupWritable, "has mode 0775"},
		{sticky, "has mode 0777"}, // the watched directory itself may not be
		{underWritable, filepath.Dir(underWritable) + " has mode 0777"},
		{link, "is a symbolic link (to " + good + ")"},
		{filepath.Join(link, "x"), "is a symbolic link"},
		{file, "is not a directory"},
		{filepath.Join(base, "missing"), "no such file"},
		{"relative/dir", "want an absolute, clean path"},
		{base + "/good/../good/pods", "want an absolute, clean path"},
	} {
		err := CheckTrustedDir(tc.dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.dir, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.dir, err, tc.want)
		}
	}
}

func TestCheckTrustedDirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	base := trustedBase(t)
	dir := filepath.Join(base, "nobody")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrustedDir(dir); err == nil || !strings.Contains(err.Error(), "owned by uid 65534, want root") {
		t.Errorf("got %v", err)
	}
}

const trustedPod = `apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers: [{name: c, image: busybox}]
`

func TestLoadTrustedDirRefusesFilesOthersCanChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Chmod(elsewhere, 0o777); err != nil {
		t.Fatal(err)
	}
	write := func(path, name string, mode os.FileMode, uid int) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(trustedPod, "NAME", name)), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, 0); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a-good.yaml"), "good", 0o644, 0)
	write(filepath.Join(dir, "b-world-writable.yaml"), "writable", 0o666, 0)
	write(filepath.Join(dir, "c-users.yaml"), "users", 0o644, 65534)
	write(filepath.Join(elsewhere, "target.yaml"), "linked", 0o644, 0)
	if err := os.Symlink(filepath.Join(elsewhere, "target.yaml"), filepath.Join(dir, "d-link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTrustedDir(dir)
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("LoadTrustedDir: %v, want the files' problems", err)
	}
	var bad []string
	for _, p := range inv.Problems {
		bad = append(bad, filepath.Base(p.Source))
	}
	if want := []string{"b-world-writable.yaml", "c-users.yaml", "d-link.yaml"}; !slices.Equal(bad, want) {
		t.Errorf("problems of %v, want %v: %v", bad, want, err)
	}

	// A watch keeps the good file's pod and reports the others.
	scanner := &dirScanner{dir: dir}
	var got *Bundle
	scanner.scan(func(b *Bundle, err error) {
		got = b
		if !errors.As(err, &inv) || len(inv.Problems) != 3 {
			t.Errorf("scan: %v, want 3 problems", err)
		}
	})
	if got == nil || len(got.Pods) != 1 {
		t.Fatalf("scan kept %v, want the good pod only", got)
	}
}
