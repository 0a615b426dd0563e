package volume

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func TestHostPathTypes(t *testing.T) {
	host := t.TempDir()
	dir := filepath.Join(host, "dir")
	regular := filepath.Join(host, "file")
	sock := filepath.Join(host, "s.sock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cases := []struct {
		path    string
		typ     v1.HostPathType
		wantErr string
	}{
		{filepath.Join(host, "absent"), v1.HostPathUnset, ""},
		{dir, v1.HostPathDirectory, ""},
		{regular, v1.HostPathDirectory, "is not a directory"},
		{filepath.Join(host, "absent"), v1.HostPathDirectory, "no such file"},
		{regular, v1.HostPathFile, ""},
		{dir, v1.HostPathFile, "is not a regular file"},
		{sock, v1.HostPathSocket, ""},
		{regular, v1.HostPathSocket, "is not a socket"},
		{"/dev/null", v1.HostPathCharDev, ""},
		{regular, v1.HostPathCharDev, "is not a character device"},
		{"/dev/null", v1.HostPathBlockDev, "is not a block device"},
		{dir, v1.HostPathDirectoryOrCreate, ""},
		{regular, v1.HostPathDirectoryOrCreate, "is not a directory"},
		{regular, v1.HostPathFileOrCreate, ""},
		{dir, v1.HostPathFileOrCreate, "is not a regular file"},
		{filepath.Join(host, "no-parent", "f"), v1.HostPathFileOrCreate, "no such file"},
		{dir, "Fancy", "unknown hostPath type"},
		{"relative/path", v1.HostPathUnset, "not an absolute path"},
	}
	m := newManager(t)
	for i, tc := range cases {
		pod := podWith("u-hostpath", v1.Volume{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path, Type: ptr(tc.typ)}}})
		paths, err := m.Setup(t.Context(), pod, podspec.Sources{}, podspec.Downward{})
		if tc.wantErr == "" {
			if err != nil || paths["h"] != tc.path {
				t.Errorf("%d %s %s: %v %v", i, tc.typ, tc.path, paths, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `volume "h"`) ||
			!strings.Contains(err.Error(), tc.path) {
			t.Errorf("%d %s %s: error %v, want %q naming the volume and the path", i, tc.typ, tc.path, err, tc.wantErr)
		}
	}
}

func TestHostPathCreates(t *testing.T) {
	host := t.TempDir()
	newDir := filepath.Join(host, "a", "b")
	newFile := filepath.Join(host, "f.txt")
	m := newManager(t)
	pod := podWith("u-create",
		v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: newDir, Type: ptr(v1.HostPathDirectoryOrCreate)}}},
		v1.Volume{Name: "f", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: newFile, Type: ptr(v1.HostPathFileOrCreate)}}},
	)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	setup(t, m, pod, podspec.Sources{})
	if got := modeOf(t, newDir); got != 0o755 {
		t.Errorf("created dir mode %v, want 0755", got)
	}
	info, err := os.Stat(newFile)
	if err != nil || !info.Mode().IsRegular() || info.Size() != 0 || info.Mode().Perm() != 0o644 {
		t.Errorf("created file %v %v, want empty 0644", info, err)
	}
	// Teardown never touches host paths.
	if err := m.Teardown("u-create"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(newFile); err != nil {
		t.Errorf("teardown removed a hostPath file: %v", err)
	}
}
