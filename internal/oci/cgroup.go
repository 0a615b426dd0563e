package oci

import (
	"fmt"
	"path"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/errdefs"
)

// Cgroup parents used when neither the input nor the sandbox config names
// one (kubelet always names one), by driver.
const (
	DefaultCgroupParent        = "/berth"
	DefaultSystemdCgroupParent = "berth.slice"
)

// SystemdScopePrefix names berth's units under the systemd driver: a
// container is berth-<id>.scope in its pod's slice.
const SystemdScopePrefix = "berth"

// CgroupsPath is the cgroupfs-driver cgroupsPath of a container: parent (or
// DefaultCgroupParent when empty), made absolute, joined with the id.
func CgroupsPath(parent, containerID string) string {
	if parent == "" {
		parent = DefaultCgroupParent
	}
	return path.Join("/", parent, containerID)
}

// ValidateCgroupParent refuses a cgroup_parent the driver cannot use: under
// systemd a slice name (kubepods-besteffort-pod<uid>.slice) or kubelet's
// path form of one (/kubepods.slice/kubepods-besteffort.slice/
// kubepods-besteffort-pod<uid>.slice), under cgroupfs a clean path. "" is
// valid (the default parent).
func ValidateCgroupParent(parent string, systemd bool) error {
	if parent == "" {
		return nil
	}
	if systemd {
		_, err := systemdSlice(parent)
		return err
	}
	switch {
	case strings.HasSuffix(parent, ".slice"):
		return fmt.Errorf("cgroup_parent %q: a systemd slice, but cgroup_driver is cgroupfs: set kubelet's cgroupDriver and berth's cgroup_driver alike: %w",
			parent, errdefs.ErrInvalidArgument)
	case path.Clean("/"+parent) != "/"+strings.Trim(parent, "/") || strings.Contains(parent, ".."):
		return fmt.Errorf("cgroup_parent %q: not a clean path: %w", parent, errdefs.ErrInvalidArgument)
	}
	return nil
}

// cgroupsPathFor picks the parent (input, then the sandbox config), checks
// it for the driver and builds the cgroupsPath: parent/id for cgroupfs,
// <slice>:berth:<id> for systemd.
func cgroupsPathFor(parent string, sandbox *runtimeapi.PodSandboxConfig, id string, systemd bool) (string, error) {
	if parent == "" {
		parent = sandbox.GetLinux().GetCgroupParent()
	}
	if err := ValidateCgroupParent(parent, systemd); err != nil {
		return "", err
	}
	if strings.Contains(id, "/") || id == "" || id == "." || id == ".." {
		return "", fmt.Errorf("cgroups path: container id %q: not a path component: %w", id, errdefs.ErrInvalidArgument)
	}
	if !systemd {
		return CgroupsPath(parent, id), nil
	}
	if parent == "" {
		parent = DefaultSystemdCgroupParent
	}
	slice, err := systemdSlice(parent)
	if err != nil {
		return "", err
	}
	p, err := cgrouppath.Systemd(slice, SystemdScopePrefix, id)
	if err != nil {
		return "", fmt.Errorf("cgroups path: %w", err)
	}
	return p, nil
}

// systemdSlice is the slice a cgroup_parent names under the systemd driver
// (cgrouppath.SliceName), or InvalidArgument naming the field.
func systemdSlice(parent string) (string, error) {
	slice, err := cgrouppath.SliceName(parent)
	if err != nil {
		return "", fmt.Errorf("cgroup_parent %q: cgroup_driver is systemd, which wants a slice name such as kubepods-besteffort-pod<uid>.slice or its path /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice: %w",
			parent, errdefs.ErrInvalidArgument)
	}
	return slice, nil
}
