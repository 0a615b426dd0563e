package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// Host paths of the Debian containerd package and its helpers.
const (
	containerdBin = "/usr/bin/containerd"
	ctrBin        = "/usr/bin/ctr"
	shimBin       = "/usr/bin/containerd-shim-runc-v2"
	runcBin       = "/usr/sbin/runc"
	// criNamespace is the containerd namespace of the CRI plugin.
	criNamespace = "k8s.io"
	// pauseRef names the sandbox image the test builds.
	pauseRef = "docker.io/berth-test/pause:ctrd"
	// offlineServer is where docker.io is sent: a closed loopback port,
	// so a pull fails at once without leaving the machine.
	offlineServer = "http://127.0.0.1:9"
)

// containerd is the test's private containerd.
type containerd struct {
	harness.Process
	root, state string // its root and state directories
	socket      string // the gRPC (and CRI) socket
	runcRoot    string // runc's state for the shims' containers
	config      string // the config file
	conn        *grpc.ClientConn
	rt          runtimeapi.RuntimeServiceClient
	img         runtimeapi.ImageServiceClient
}

// ctrdSettings are the inputs of containerd's config.
type ctrdSettings struct {
	cniConfDir string // holds the test's conflist
	hostsDir   string // registry hosts.toml directories
}

// writeConfig writes containerd's config (version 2) into dir.
func (c *containerd) writeConfig(dir string, s ctrdSettings) error {
	conf := fmt.Sprintf(`version = 2
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
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, c.root, c.state, c.socket, c.socket+".ttrpc", pauseRef, runcBin, c.runcRoot, s.cniConfDir, s.hostsDir)
	c.config = filepath.Join(dir, "containerd.toml")
	return os.WriteFile(c.config, []byte(conf), 0o600)
}

// writeOfflineHosts sends docker.io, the registry of both test images, to
// offlineServer: a pull (which the test never asks for) fails locally.
// containerd 1.6 rejects a hosts.toml without a [host] table (and then
// falls back to the real registry), so the server is named twice.
func writeOfflineHosts(dir string) error { return writeHostsTOML(dir, "docker.io", offlineServer) }

// writeHostsTOML sends the registry host to server (the server named twice,
// as above).
func writeHostsTOML(dir, host, server string) error {
	hostDir := filepath.Join(dir, host)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, server)
	return os.WriteFile(filepath.Join(hostDir, "hosts.toml"), []byte(conf), 0o644)
}

// checkOffline asks the CRI plugin for a pull, which must fail at
// offlineServer: no image can come from the internet.
func (c *containerd) checkOffline() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ref = "docker.io/berth-test/absent:offline"
	_, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err == nil {
		return fmt.Errorf("pull of %s succeeded; want a failure at %s", ref, offlineServer)
	}
	if !strings.Contains(err.Error(), strings.TrimPrefix(offlineServer, "http://")) {
		return fmt.Errorf("pull of %s: %w; want a failure at %s", ref, err, offlineServer)
	}
	return nil
}

// launch starts containerd and waits until its CRI plugin answers Version.
func (c *containerd) launch() error {
	c.Name, c.Bin, c.Args, c.CleanExit = "containerd", containerdBin, []string{"--config", c.config, "--log-level", "debug"}, true
	if err := c.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !c.Running() {
			return fmt.Errorf("containerd exited before it was ready: %v", c.ExitStatus())
		}
		if err := c.connect(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("containerd not ready after 30s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connect dials the socket (once) and asks the CRI plugin its version.
func (c *containerd) connect() error {
	if _, err := os.Stat(c.socket); err != nil {
		return err
	}
	if c.conn == nil {
		conn, err := grpc.NewClient("unix://"+c.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		c.conn, c.rt, c.img = conn, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	return err
}

// shutdown closes the client and stops containerd (its shims keep
// running, as they do in production).
func (c *containerd) shutdown() error {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.rt, c.img = nil, nil, nil
	}
	return c.Stop(30 * time.Second)
}

// endpoint is the CRI endpoint the agent and berth exec use.
func (c *containerd) endpoint() string { return "unix://" + c.socket }

// busyboxRef is the name pods' "busybox" normalizes to.
const busyboxRef = "docker.io/library/busybox:latest"

// writeContainerdImages writes a `docker save` archive of the two images
// containerd needs to path: busybox, and the sandbox image (pauseRef):
// busybox with berth-pause as /pause, its entrypoint.
func writeContainerdImages(path, pauseBinary string) error {
	pause, err := os.ReadFile(pauseBinary)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	bare, err := bareImage(pauseBinary)
	if err != nil {
		return err
	}
	return testimage.WriteDockerArchive(path, testimage.Options{Name: busyboxRef},
		testimage.Options{Name: pauseRef, Entrypoint: []string{"/pause"}, ExtraFiles: map[string]string{"/pause": string(pause)}}, bare)
}

// ctrImport imports a `docker save` archive into the CRI namespace.
func (c *containerd) ctrImport(archive string) error {
	out, err := exec.Command(ctrBin, "-a", c.socket, "-n", criNamespace, "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", archive, err, out)
	}
	return nil
}

// importImages imports an archive of writeContainerdImages into the CRI
// namespace with ctr and checks that the CRI plugin lists both images.
func (c *containerd) importImages(archive string) error {
	if err := c.ctrImport(archive); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ref := range []string{pauseRef, busyboxRef} {
		resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			return fmt.Errorf("the CRI plugin's status of %s after the import: %w", ref, err)
		}
		if resp.GetImage() == nil {
			return fmt.Errorf("the CRI plugin does not list %s after the import", ref)
		}
	}
	return nil
}
