package oci

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const devShm = "/dev/shm"

// standardMounts is the filesystem set every container gets, in mount
// order. Privileged containers get /sys and its cgroup mount read-write.
func standardMounts(privileged bool) []specs.Mount {
	sysMode := "ro"
	if privileged {
		sysMode = "rw"
	}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
			Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: devShm, Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", sysMode}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
			Options: []string{"nosuid", "noexec", "nodev", "relatime", sysMode}},
	}
}

// containerMounts returns the spec's mounts and the rootfs propagation the
// requested mounts need: the standard set (minus what the request mounts
// over), then the pod files and the request's binds, parents before
// children.
func containerMounts(in Input, opts *runtimeapi.NamespaceOption) ([]specs.Mount, string, error) {
	requested, propagation, err := requestedMounts(in.Sandbox, in.Config.GetMounts(), in.ImageVolumes)
	if err != nil {
		return nil, "", err
	}
	covered := make(map[string]bool, len(requested))
	for _, m := range requested {
		covered[m.Destination] = true
	}
	sc := in.Config.GetLinux().GetSecurityContext()
	var mounts []specs.Mount
	for _, m := range standardMounts(sc.GetPrivileged()) {
		if covered[m.Destination] || (covered["/dev"] && strings.HasPrefix(m.Destination, "/dev/")) {
			continue
		}
		if m.Destination == devShm {
			m = shmMount(in.Sandbox, opts, m)
		}
		mounts = append(mounts, m)
	}
	binds := append(podFileMounts(in.Sandbox, covered, sc.GetReadonlyRootfs()), requested...)
	sort.SliceStable(binds, func(i, j int) bool { return pathDepth(binds[i].Destination) < pathDepth(binds[j].Destination) })
	return append(mounts, binds...), propagation, nil
}

// shmMount is the host's /dev/shm for host IPC, the pod's shared one when
// the sandbox has it, else the private tmpfs.
func shmMount(sb Sandbox, opts *runtimeapi.NamespaceOption, private specs.Mount) specs.Mount {
	source := sb.ShmPath
	if opts.GetIpc() == runtimeapi.NamespaceMode_NODE {
		source = devShm
	}
	if source == "" {
		return private
	}
	return specs.Mount{Destination: devShm, Type: "bind", Source: source,
		Options: []string{"rbind", "rprivate", "nosuid", "nodev", "noexec", "rw"}}
}

func podFileMounts(sb Sandbox, covered map[string]bool, readonly bool) []specs.Mount {
	mode := "rw"
	if readonly {
		mode = "ro"
	}
	var mounts []specs.Mount
	for _, f := range []struct{ dest, source string }{
		{"/etc/hostname", sb.HostnamePath},
		{"/etc/hosts", sb.HostsPath},
		{"/etc/resolv.conf", sb.ResolvConfPath},
	} {
		if f.source == "" || covered[f.dest] {
			continue
		}
		mounts = append(mounts, specs.Mount{Destination: f.dest, Type: "bind", Source: f.source,
			Options: []string{"rbind", "rprivate", mode}})
	}
	return mounts
}

// requestedMounts converts the CRI mounts to bind mounts and returns the
// rootfs propagation they need ("rshared" for a bidirectional mount,
// "rslave" for host-to-container, else ""). imageVolumes are the host
// paths of the mounts that have an image (by index), which the caller
// mounted beforehand. A mount with the pod's id mappings is idmapped into
// its user namespace: by runc for a bind mount, by the caller for an image
// volume (an overlay cannot be idmapped, its layers are).
func requestedMounts(sb Sandbox, requested []*runtimeapi.Mount, imageVolumes map[int]string) ([]specs.Mount, string, error) {
	mounts := make([]specs.Mount, 0, len(requested))
	rootfsPropagation := ""
	for i, m := range requested {
		dest, err := checkRequestedMount(m)
		if err != nil {
			return nil, "", fmt.Errorf("mounts[%d] %q: %w", i, m.GetContainerPath(), err)
		}
		idmap, err := mountIDMap(sb, m)
		if err != nil {
			return nil, "", fmt.Errorf("mounts[%d] %q: %w", i, m.GetContainerPath(), err)
		}
		if m.GetImage() != nil {
			idmap = nil
		}
		source, options, err := mountSource(m, imageVolumes[i])
		if err != nil {
			return nil, "", fmt.Errorf("mounts[%d] %q: %w", i, m.GetContainerPath(), err)
		}
		var propagation string
		switch m.GetPropagation() {
		case runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
			propagation = "rprivate"
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			propagation = "rslave"
			if rootfsPropagation == "" {
				rootfsPropagation = "rslave"
			}
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			propagation, rootfsPropagation = "rshared", "rshared"
		default:
			return nil, "", fmt.Errorf("mounts[%d] %q: propagation %d: unknown: %w",
				i, m.GetContainerPath(), m.GetPropagation(), errdefs.ErrInvalidArgument)
		}
		options = append([]string{"rbind", propagation}, options...)
		mounts = append(mounts, specs.Mount{Destination: dest, Type: "bind", Source: source,
			Options: append(append(options, m.GetMountOptions()...), idmap...)})
	}
	return mounts, rootfsPropagation, nil
}

// mountSource is the host path a requested mount binds and its mode
// options. An image volume binds imageVolume (what the caller mounted of
// the image) read-only, nosuid and nodev; its programs run, as on
// containerd and CRI-O (KEP-4639 dropped noexec before GA).
func mountSource(m *runtimeapi.Mount, imageVolume string) (string, []string, error) {
	mode := "rw"
	switch {
	case m.GetRecursiveReadOnly():
		mode = "rro" // runc makes every submount read-only too
	case m.GetReadonly() || m.GetImage() != nil:
		mode = "ro"
	}
	if m.GetImage() == nil {
		return path.Clean(m.GetHostPath()), []string{mode}, nil
	}
	if imageVolume == "" || !path.IsAbs(imageVolume) {
		return "", nil, fmt.Errorf("image volume %q: not mounted on the host: %w", m.GetImage().GetImage(), errdefs.ErrFailedPrecondition)
	}
	return imageVolume, []string{mode, "nosuid", "nodev"}, nil
}

// checkRequestedMount validates one CRI mount and returns its clean
// destination. SELinux relabeling is ignored (berth runs without SELinux).
// An image volume (image set) has no host path.
func checkRequestedMount(m *runtimeapi.Mount) (string, error) {
	dest := path.Clean(m.GetContainerPath())
	readonly := m.GetReadonly() || m.GetImage() != nil // an image volume is always read-only
	switch {
	case m.GetImage() != nil && m.GetImage().GetImage() == "":
		return "", fmt.Errorf("image.image: empty: %w", errdefs.ErrInvalidArgument)
	case m.GetRecursiveReadOnly() && !readonly:
		return "", fmt.Errorf("recursive_read_only: needs readonly: %w", errdefs.ErrInvalidArgument)
	case m.GetRecursiveReadOnly() && m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
		return "", fmt.Errorf("recursive_read_only: needs propagation PRIVATE, not %s: %w", m.GetPropagation(), errdefs.ErrInvalidArgument)
	case !path.IsAbs(m.GetContainerPath()):
		return "", fmt.Errorf("container path: not absolute: %w", errdefs.ErrInvalidArgument)
	case dest == "/":
		return "", fmt.Errorf("container path: mounts over the rootfs: %w", errdefs.ErrInvalidArgument)
	case m.GetImage() == nil && !path.IsAbs(m.GetHostPath()):
		return "", fmt.Errorf("host path %q: not absolute: %w", m.GetHostPath(), errdefs.ErrInvalidArgument)
	}
	for _, opt := range m.GetMountOptions() {
		if !MountOptions[opt] {
			return "", fmt.Errorf("mount_options: %q: berth takes only nosuid, nodev and noexec: %w", opt, errdefs.ErrInvalidArgument)
		}
	}
	return dest, nil
}

// MountOptions are the mount_options a CRI bind mount may carry (kubelet's
// VolumeBindMountOptions): flags that only take rights away. Status
// advertises the feature.
var MountOptions = map[string]bool{"nosuid": true, "nodev": true, "noexec": true}

func pathDepth(p string) int {
	return strings.Count(path.Clean(p), "/")
}
