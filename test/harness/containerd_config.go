package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// configV2 is containerd 1.6's config (version 2): overlayfs, the runc v2
// shim with SystemRunc and runc's root under the state directory,
// cgroupfs, the sandbox image ContainerdPauseRef, network namespaces under
// the state directory, one CNI conflist. Its verbs, in order: root,
// state, socket, ttrpc socket, sandbox image, runc, runc root, CNI bin
// dir, CNI conf dir, registry hosts dir.
const configV2 = `version = 2
root = %q
state = %q
# opt would create /var/lib/containerd/opt; the other snapshotters are unused.
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs",
]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = %q
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`

// configV3 is the same settings in containerd 2.x's config (version 3),
// where the CRI plugin is three: the images (snapshotter, the sandbox
// image as pinned image "sandbox", registry hosts), the runtime (runc
// handler, CNI, security switches) and the gRPC service (streaming). NRI
// (a socket under /var/run/nri), tracing and the snapshotters 2.x adds are
// off. The verbs come in configV2's order.
const configV3 = `version = 3
root = %[1]q
state = %[2]q
# opt would create /var/lib/containerd/opt; NRI listens on /var/run/nri; the
# other snapshotters and tracing are unused.
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %[10]q

[plugins."io.containerd.cri.v1.runtime"]
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = %[6]q
        Root = %[7]q
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[8]q]
    conf_dir = %[9]q
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`

// ContainerdSettings are the inputs of containerd's config.
type ContainerdSettings struct {
	CNIConfDir string // holds the one conflist containerd uses
	HostsDir   string // registry hosts.toml directories
}

// WriteConfig writes containerd's config into dir in its flavour's
// version (configV2, configV3): the same settings either way.
func (c *Containerd) WriteConfig(dir string, s ContainerdSettings) error {
	var tmpl string
	switch c.Flavour.ConfigVersion {
	case 2:
		tmpl = configV2
	case 3:
		tmpl = configV3
	default:
		return fmt.Errorf("%s: no config of version %d", c.Flavour.Name, c.Flavour.ConfigVersion)
	}
	conf := fmt.Sprintf(tmpl, c.Root, c.State, c.Socket, c.Socket+".ttrpc", ContainerdPauseRef, SystemRunc, c.RuncRoot,
		CNIBinDir, s.CNIConfDir, s.HostsDir)
	c.Config = filepath.Join(dir, "containerd.toml")
	return os.WriteFile(c.Config, []byte(conf), 0o600)
}
