package oci

import (
	"errors"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestCgroupsPath(t *testing.T) {
	for _, tc := range []struct{ parent, id, want string }{
		{"", "c1", "/berth/c1"},
		{"/kubepods/burstable/pod1", "c1", "/kubepods/burstable/pod1/c1"},
		{"kubepods", "c1", "/kubepods/c1"},
		{"/", "c1", "/c1"},
	} {
		if got := CgroupsPath(tc.parent, tc.id); got != tc.want {
			t.Errorf("CgroupsPath(%q, %q) = %q, want %q", tc.parent, tc.id, got, tc.want)
		}
	}
	sandbox := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/pod9"}}
	if got, err := cgroupsPathFor("", sandbox, "c1", false); err != nil || got != "/kubepods/pod9/c1" {
		t.Errorf("sandbox parent fallback = %q, %v", got, err)
	}
	if got, err := cgroupsPathFor("/over", sandbox, "c1", false); err != nil || got != "/over/c1" {
		t.Errorf("input parent = %q, %v", got, err)
	}
	for _, bad := range []struct{ parent, id string }{
		{"kubepods-burstable.slice", "c1"}, {"/a/../b", "c1"}, {"/a//b", "c1"}, {"/a", "x/y"}, {"/a", ".."},
	} {
		if _, err := cgroupsPathFor(bad.parent, nil, bad.id, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("cgroupsPathFor(%q, %q): err = %v, want InvalidArgument", bad.parent, bad.id, err)
		}
	}
}

func TestSystemdCgroupsPath(t *testing.T) {
	sandbox := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "kubepods-besteffort-pod9.slice"}}
	for _, tc := range []struct {
		parent  string
		sandbox *runtimeapi.PodSandboxConfig
		want    string
	}{
		{"", sandbox, "kubepods-besteffort-pod9.slice:berth:c1"},
		{"kubepods.slice", sandbox, "kubepods.slice:berth:c1"},
		{"", nil, "berth.slice:berth:c1"},
		{"-.slice", nil, "-.slice:berth:c1"},
		// kubelet's systemd driver sends the slice's path
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9.slice", nil, "kubepods-besteffort-pod9.slice:berth:c1"},
	} {
		if got, err := cgroupsPathFor(tc.parent, tc.sandbox, "c1", true); err != nil || got != tc.want {
			t.Errorf("cgroupsPathFor(%q, systemd) = %q, %v; want %q", tc.parent, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ parent, id string }{
		{"/kubepods/burstable/pod1", "c1"}, {"kubepods", "c1"}, {"kubepods.slice/x.slice", "c1"},
		{"kubepods--x.slice", "c1"}, {"/a.slice/b.slice", "c1"}, {"/", "c1"}, {"kubepods.slice", "x:y"}, {"kubepods.slice", "x/y"}, {"kubepods.slice", ".."},
	} {
		_, err := cgroupsPathFor(bad.parent, nil, bad.id, true)
		if !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("cgroupsPathFor(%q, %q, systemd): err = %v, want InvalidArgument", bad.parent, bad.id, err)
		}
	}
	if err := ValidateCgroupParent("/kubepods/pod1", true); err == nil || !strings.Contains(err.Error(), "cgroup_parent") {
		t.Errorf("cgroupfs parent under systemd: err = %v, want it to name cgroup_parent", err)
	}
	if err := ValidateCgroupParent("kubepods.slice", false); err == nil || !strings.Contains(err.Error(), "cgroup_driver is cgroupfs") {
		t.Errorf("slice under cgroupfs: err = %v, want it to name the driver", err)
	}
}

func TestSpecsUseSystemdCgroupsPath(t *testing.T) {
	in := testInput(t)
	in.SystemdCgroup = true
	in.Sandbox.Config.Linux.CgroupParent = "kubepods-burstable-podx.slice"
	spec, err := BuildSpec(in)
	if err != nil || spec.Linux.CgroupsPath != "kubepods-burstable-podx.slice:berth:ctr1" {
		t.Fatalf("container: spec %v, err %v", spec, err)
	}
	sb, err := BuildSandboxSpec(SandboxInput{Sandbox: in.Sandbox, RootfsPath: "/rootfs", SystemdCgroup: true})
	if err != nil || sb.Linux.CgroupsPath != "kubepods-burstable-podx.slice:berth:sb1" {
		t.Fatalf("sandbox: spec %v, err %v", sb, err)
	}
	in.Sandbox.Config.Linux.CgroupParent = "/kubepods/podx"
	if _, err := BuildSpec(in); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "cgroup_parent") {
		t.Fatalf("cgroupfs parent under systemd: err %v, want InvalidArgument naming cgroup_parent", err)
	}
}
