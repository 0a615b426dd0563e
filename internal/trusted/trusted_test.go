package trusted

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) *os.File {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cases := []struct {
		what string
		f    *os.File
		want string
	}{
		{"0644", write("ok", 0o644), ""},
		{"0755", write("exe", 0o755), ""},
		{"group-writable", write("gw", 0o664), "has mode 0664: writable by group or others"},
		{"world-writable", write("ww", 0o646), "has mode 0646: writable by group or others"},
		{"a directory", d, "not a regular file"},
	}
	if os.Geteuid() == 0 {
		nobody := write("nobody", 0o644)
		if err := nobody.Chown(65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			what string
			f    *os.File
			want string
		}{"owned by nobody", nobody, "owned by uid 65534, want root (0)"})
	}
	for _, tc := range cases {
		err := CheckFile(tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.what, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.what, err, tc.want)
		}
	}
}
