package cdidevice

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestRequestedReadsTheFieldAndTheAnnotations(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		CDIDevices: []*runtimeapi.CDIDevice{{Name: "example.com/gpu=0"}, {Name: "example.com/gpu=1"}},
		Annotations: map[string]string{
			"cdi.k8s.io/vendor-b": "example.com/nic=a,example.com/gpu=0",
			"cdi.k8s.io/vendor-a": "example.com/fpga=x",
			"other":               "example.com/ignored=1",
		},
	}
	got, err := Requested(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{"example.com/gpu=0", "cdi_devices[0]"}, {"example.com/gpu=1", "cdi_devices[1]"},
		{"example.com/fpga=x", "annotations[cdi.k8s.io/vendor-a]"}, {"example.com/nic=a", "annotations[cdi.k8s.io/vendor-b]"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Requested = %v, want %v", got, want)
	}
	if got, err := Requested(&runtimeapi.ContainerConfig{}); err != nil || len(got) != 0 {
		t.Errorf("no devices: %v, %v", got, err)
	}
}

func TestRequestedRefusesNamesThatAreNotQualified(t *testing.T) {
	for _, tc := range []struct {
		cfg   *runtimeapi.ContainerConfig
		field string
	}{
		{&runtimeapi.ContainerConfig{CDIDevices: []*runtimeapi.CDIDevice{{Name: "gpu0"}}}, "cdi_devices[0]"},
		{&runtimeapi.ContainerConfig{CDIDevices: []*runtimeapi.CDIDevice{{Name: "example.com/gpu=0"}, {Name: ""}}}, "cdi_devices[1]"},
		{&runtimeapi.ContainerConfig{Annotations: map[string]string{"cdi.k8s.io/x": "example.com/gpu=0,,"}}, "annotations[cdi.k8s.io/x]"},
		{&runtimeapi.ContainerConfig{Annotations: map[string]string{"cdi.k8s.io/x": "example.com/gpu"}}, "annotations[cdi.k8s.io/x]"},
	} {
		_, err := Requested(tc.cfg)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), tc.field+": ") {
			t.Errorf("Requested(%v) = %v; want InvalidArgument starting with %s", tc.cfg, err, tc.field)
		}
	}
}

// writeSpec writes a CDI spec file of vendor example.com, class test,
// whose device name is a node at /dev/<name> made from the host's
// /dev/null, with an env entry and a mount.
func writeSpec(t *testing.T, dir, file, name string) {
	t.Helper()
	spec := `cdiVersion: "0.6.0"
kind: example.com/test
devices:
- name: ` + name + `
  containerEdits:
    deviceNodes:
    - path: /dev/berth-test-` + name + `
      hostPath: /dev/null
    env:
    - BERTH_TEST_DEVICE=` + name + `
containerEdits:
  mounts:
  - hostPath: /etc/hostname
    containerPath: /etc/berth-test-device
    options: [ro, bind]
`
	if err := os.WriteFile(filepath.Join(dir, file), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryInjectsADeviceAndRefreshes(t *testing.T) {
	low, high := t.TempDir(), filepath.Join(t.TempDir(), "later")
	writeSpec(t, low, "a.yaml", "one")
	r, err := New([]string{low, high})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{{Name: "example.com/test=one", Field: "cdi_devices[0]"}}
	if err := r.Check(reqs); err != nil {
		t.Fatal(err)
	}
	spec := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
	if err := r.Inject(spec, reqs); err != nil {
		t.Fatal(err)
	}
	if len(spec.Linux.Devices) != 1 || spec.Linux.Devices[0].Path != "/dev/berth-test-one" || spec.Linux.Devices[0].Major != 1 || spec.Linux.Devices[0].Minor != 3 {
		t.Errorf("devices = %+v, want /dev/berth-test-one as 1:3 (/dev/null)", spec.Linux.Devices)
	}
	if !slices.Contains(spec.Process.Env, "BERTH_TEST_DEVICE=one") {
		t.Errorf("env = %v", spec.Process.Env)
	}
	if len(spec.Mounts) != 1 || spec.Mounts[0].Destination != "/etc/berth-test-device" {
		t.Errorf("mounts = %+v", spec.Mounts)
	}
	if spec.Linux.Resources == nil || !slices.ContainsFunc(spec.Linux.Resources.Devices, func(d specs.LinuxDeviceCgroup) bool {
		return d.Allow && d.Major != nil && *d.Major == 1 && d.Minor != nil && *d.Minor == 3
	}) {
		t.Errorf("no cgroup rule allowing 1:3: %+v", spec.Linux.Resources)
	}

	// A device in a file written later, in a directory made later, resolves
	// once the registry has seen it.
	two := []Request{{Name: "example.com/test=two", Field: "annotations[cdi.k8s.io/x]"}}
	if err := os.MkdirAll(high, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSpec(t, high, "b.yaml", "two")
	deadline := time.Now().Add(10 * time.Second)
	for r.Check(two) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("example.com/test=two never resolved: %v (errors %v)", r.Check(two), r.Errors())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRegistryNamesWhatItCannotResolve(t *testing.T) {
	dir := t.TempDir()
	writeSpec(t, dir, "a.yaml", "one")
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{{Name: "example.com/test=one", Field: "cdi_devices[0]"}, {Name: "example.com/test=nine", Field: "cdi_devices[1]"}}
	for name, err := range map[string]error{"Check": r.Check(reqs), "Inject": r.Inject(&specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}, reqs)} {
		want := `cdi_devices[1]: CDI device "example.com/test=nine": no spec in ` + dir + " defines it"
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %v; want InvalidArgument %q", name, err, want)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("cdiVersion: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(reqs[:1]); err != nil {
		t.Errorf("a broken file beside a good one: %v", err)
	}
}

func TestRegistryLeavesOutADirectoryOthersCanWrite(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	writeSpec(t, open, "a.yaml", "one")
	r, err := New([]string{open})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check([]Request{{Name: "example.com/test=one", Field: "cdi_devices[0]"}}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("a device from a world-writable directory: %v; want it unresolved", err)
	}
	if errs := r.Errors(); len(errs) != 1 || !strings.HasPrefix(errs[0], open+": left out: ") {
		t.Errorf("Errors = %q; want the directory left out", errs)
	}
}
