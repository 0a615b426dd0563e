package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hostDevDir is the host's device directory, walked for privileged
// containers (a variable so tests can point it elsewhere).
var hostDevDir = "/dev"

// defaultDeviceNodes are created in every container's /dev. /dev/ptmx is
// not among them: runc makes it a symlink to pts/ptmx of the container's own
// devpts, and defaultDeviceRules allow it.
func defaultDeviceNodes() []specs.LinuxDevice {
	nodes := []struct {
		name         string
		major, minor int64
	}{
		{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
	}
	devices := make([]specs.LinuxDevice, 0, len(nodes))
	for _, n := range nodes {
		mode := os.FileMode(0o666)
		var root uint32
		devices = append(devices, specs.LinuxDevice{Path: "/dev/" + n.name, Type: "c", Major: n.major, Minor: n.minor,
			FileMode: &mode, UID: &root, GID: &root})
	}
	return devices
}

// defaultDeviceRules is the device cgroup of an unprivileged container:
// deny everything, then allow mknod of any device and use of the standard
// nodes (null, zero, full, random, urandom, tty, console, ptmx, pts/*, tun).
func defaultDeviceRules() []specs.LinuxDeviceCgroup {
	rules := []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		{Allow: true, Type: "c", Access: "m"},
		{Allow: true, Type: "b", Access: "m"},
	}
	for _, d := range [][2]int64{{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 1}, {5, 2}, {136, -1}, {10, 200}} {
		rules = append(rules, deviceRule("c", d[0], d[1], "rwm"))
	}
	return rules
}

// deviceRule allows one device; minor -1 means every minor.
func deviceRule(kind string, major, minor int64, access string) specs.LinuxDeviceCgroup {
	rule := specs.LinuxDeviceCgroup{Allow: true, Type: kind, Major: &major, Access: access}
	if minor >= 0 {
		rule.Minor = &minor
	}
	return rule
}

// containerDevices returns the device nodes and device cgroup rules: the
// defaults, every host device when privileged (cgroup allows all), then
// the requested devices. A later node with the same path replaces an
// earlier one.
func containerDevices(requested []*runtimeapi.Device, privileged bool) ([]specs.LinuxDevice, []specs.LinuxDeviceCgroup, error) {
	nodes := defaultDeviceNodes()
	rules := defaultDeviceRules()
	if privileged {
		hostNodes, err := hostDevices(hostDevDir, "/dev")
		if err != nil {
			return nil, nil, fmt.Errorf("privileged: host devices: %w", err)
		}
		nodes = append(nodes, hostNodes...)
		rules = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	}
	for i, d := range requested {
		access, err := devicePermissions(d.GetPermissions())
		if err != nil {
			return nil, nil, fmt.Errorf("devices[%d] %q: %w", i, d.GetHostPath(), err)
		}
		found, err := requestedDevice(d)
		if err != nil {
			return nil, nil, fmt.Errorf("devices[%d] %q: %w", i, d.GetHostPath(), err)
		}
		for _, node := range found {
			nodes = append(nodes, node)
			if !privileged {
				rules = append(rules, deviceRule(node.Type, node.Major, node.Minor, access))
			}
		}
	}
	return uniqueDevices(nodes), rules, nil
}

func devicePermissions(perms string) (string, error) {
	if perms == "" {
		return "rwm", nil
	}
	if strings.Trim(perms, "rwm") != "" {
		return "", fmt.Errorf("permissions %q: only r, w and m allowed: %w", perms, errdefs.ErrInvalidArgument)
	}
	return perms, nil
}

// requestedDevice resolves a CRI device: a device node, or a directory whose
// device nodes appear under container_path.
func requestedDevice(d *runtimeapi.Device) ([]specs.LinuxDevice, error) {
	if !path.IsAbs(d.GetHostPath()) {
		return nil, fmt.Errorf("host path: not absolute: %w", errdefs.ErrInvalidArgument)
	}
	dest := d.GetContainerPath()
	if dest == "" {
		dest = d.GetHostPath()
	}
	if !path.IsAbs(dest) {
		return nil, fmt.Errorf("container path %q: not absolute: %w", dest, errdefs.ErrInvalidArgument)
	}
	info, err := os.Stat(d.GetHostPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("host path: %w", errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("host path: %w", err)
	}
	if info.IsDir() {
		return hostDevices(d.GetHostPath(), path.Clean(dest))
	}
	node, ok, err := deviceNode(d.GetHostPath(), path.Clean(dest))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("host path: not a character or block device: %w", errdefs.ErrInvalidArgument)
	}
	return []specs.LinuxDevice{node}, nil
}

// deviceNode describes the device at hostPath as destPath; ok is false for
// anything but a character or block device.
func deviceNode(hostPath, destPath string) (specs.LinuxDevice, bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(hostPath, &st); err != nil {
		return specs.LinuxDevice{}, false, fmt.Errorf("device %q: stat: %w", hostPath, err)
	}
	var kind string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		kind = "c"
	case unix.S_IFBLK:
		kind = "b"
	default:
		return specs.LinuxDevice{}, false, nil
	}
	mode := os.FileMode(st.Mode & 0o777)
	uid, gid := st.Uid, st.Gid
	return specs.LinuxDevice{Path: destPath, Type: kind,
		Major: int64(unix.Major(st.Rdev)), Minor: int64(unix.Minor(st.Rdev)),
		FileMode: &mode, UID: &uid, GID: &gid}, true, nil
}

// hostDevices lists the character and block devices under dir (recursively,
// skipping the pseudo-filesystems runc sets up itself and /dev/console),
// mapped under dest.
func hostDevices(dir, dest string) ([]specs.LinuxDevice, error) {
	var devices []specs.LinuxDevice
	err := filepath.WalkDir(dir, func(p string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			switch entry.Name() {
			case "pts", "shm", "fd", "mqueue", ".lxc", ".lxd-mounts", ".udev":
				if p != dir {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if entry.Type()&(fs.ModeDevice|fs.ModeCharDevice) == 0 || (p == filepath.Join(dir, "console")) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		node, ok, err := deviceNode(p, path.Join(dest, filepath.ToSlash(rel)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if ok {
			devices = append(devices, node)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("device directory %q: %w", dir, err)
	}
	return devices, nil
}

func uniqueDevices(devices []specs.LinuxDevice) []specs.LinuxDevice {
	index := make(map[string]int, len(devices))
	out := devices[:0:0]
	for _, d := range devices {
		if i, ok := index[d.Path]; ok {
			out[i] = d
			continue
		}
		index[d.Path] = len(out)
		out = append(out, d)
	}
	return out
}
