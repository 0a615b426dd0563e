package oci

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func devicePaths(devices []specs.LinuxDevice) []string {
	var out []string
	for _, d := range devices {
		out = append(out, d.Path)
	}
	return out
}

func mknodChar(t *testing.T, p string, major, minor uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR|0o640, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatal(err)
	}
}

func TestContainerDevicesDefaults(t *testing.T) {
	nodes, rules, err := containerDevices(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	if got := devicePaths(nodes); !reflect.DeepEqual(got, want) {
		t.Fatalf("nodes = %v, want %v", got, want)
	}
	if rules[0].Allow || rules[0].Access != "rwm" || rules[0].Type != "" {
		t.Fatalf("first rule %+v, want deny all", rules[0])
	}
	if !hasRule(rules, "c", 5, 2, "rwm") || !hasRule(rules, "c", 1, 3, "rwm") || !hasRule(rules, "c", 136, -1, "rwm") {
		t.Fatalf("rules %+v lack ptmx, null or pts", rules)
	}
}

func hasRule(rules []specs.LinuxDeviceCgroup, kind string, major, minor int64, access string) bool {
	for _, r := range rules {
		if r.Allow && r.Type == kind && r.Major != nil && *r.Major == major && r.Access == access &&
			((minor < 0 && r.Minor == nil) || (r.Minor != nil && *r.Minor == minor)) {
			return true
		}
	}
	return false
}

func TestContainerDevicesRequested(t *testing.T) {
	nodes, rules, err := containerDevices([]*runtimeapi.Device{
		{HostPath: "/dev/null", ContainerPath: "/dev/mynull", Permissions: "r"},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	last := nodes[len(nodes)-1]
	if last.Path != "/dev/mynull" || last.Type != "c" || last.Major != 1 || last.Minor != 3 {
		t.Fatalf("requested node = %+v", last)
	}
	if !hasRule(rules, "c", 1, 3, "r") {
		t.Fatalf("no r rule for 1:3 in %+v", rules)
	}
	for _, tc := range []struct {
		name  string
		d     *runtimeapi.Device
		class error
	}{
		{"missing host device", &runtimeapi.Device{HostPath: "/dev/does-not-exist-berth", ContainerPath: "/dev/x"}, errdefs.ErrNotFound},
		{"regular file", &runtimeapi.Device{HostPath: "/etc/hostname", ContainerPath: "/dev/x"}, errdefs.ErrInvalidArgument},
		{"bad permissions", &runtimeapi.Device{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "rx"}, errdefs.ErrInvalidArgument},
		{"relative container path", &runtimeapi.Device{HostPath: "/dev/null", ContainerPath: "dev/x"}, errdefs.ErrInvalidArgument},
	} {
		if _, _, err := containerDevices([]*runtimeapi.Device{tc.d}, false); !errors.Is(err, tc.class) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.class)
		}
	}
}

func TestContainerDevicesDirectoryAndPrivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	mknodChar(t, filepath.Join(dir, "snd/pcm0"), 116, 3)
	mknodChar(t, filepath.Join(dir, "null"), 1, 3)
	mknodChar(t, filepath.Join(dir, "console"), 5, 1)
	mknodChar(t, filepath.Join(dir, "pts/0"), 136, 0)
	if err := os.WriteFile(filepath.Join(dir, "not-a-device"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	nodes, _, err := containerDevices([]*runtimeapi.Device{{HostPath: filepath.Join(dir, "snd"), ContainerPath: "/dev/snd"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if last := nodes[len(nodes)-1]; last.Path != "/dev/snd/pcm0" || last.Major != 116 || last.Minor != 3 || *last.FileMode != 0o640 {
		t.Fatalf("directory device = %+v", last)
	}

	saved := hostDevDir
	hostDevDir = dir
	t.Cleanup(func() { hostDevDir = saved })
	nodes, rules, err := containerDevices(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/snd/pcm0"}
	if got := devicePaths(nodes); !reflect.DeepEqual(got, want) {
		t.Fatalf("privileged nodes = %v, want %v (console and pts skipped)", got, want)
	}
	if len(rules) != 1 || !rules[0].Allow || rules[0].Type != "" || rules[0].Access != "rwm" {
		t.Fatalf("privileged rules = %+v, want allow all", rules)
	}
	if *nodes[0].FileMode != 0o640 {
		t.Fatalf("host /dev/null did not replace the default node: %+v", nodes[0])
	}
}
