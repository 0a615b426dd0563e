package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Host paths of the Debian containerd package and its helpers.
const (
	ContainerdBin     = "/usr/bin/containerd"
	CtrBin            = "/usr/bin/ctr"
	ContainerdShimBin = "/usr/bin/containerd-shim-runc-v2"
	// SystemRunc is Debian's runc: containerd's runc here.
	SystemRunc = "/usr/sbin/runc"
	// CRINamespace is the containerd namespace of the CRI plugin.
	CRINamespace = "k8s.io"
	// ContainerdPauseRef names the sandbox image WriteContainerdImages
	// builds.
	ContainerdPauseRef = "docker.io/berth-test/pause:ctrd"
	// OfflineServer is where docker.io is sent: a closed loopback port,
	// so a pull fails at once without leaving the machine.
	OfflineServer = "http://127.0.0.1:9"
)

// Containerd is a private containerd of a flavour (Containerd16, or a
// Containerd2 built from its module) with the CRI plugin: its own root,
// state and socket, runc's state for its shims' containers under its
// state, and the CRI clients once it answers.
type Containerd struct {
	Process
	Flavour     ContainerdFlavour
	Root, State string // its root and state directories
	Socket      string // the gRPC (and CRI) socket
	RuncRoot    string // runc's state for the shims' containers
	Config      string // the config file, once written
	Conn        *grpc.ClientConn
	RT          runtimeapi.RuntimeServiceClient
	Img         runtimeapi.ImageServiceClient
}

// NewContainerd lays a containerd of flavour f out under root and state
// (which it creates nothing in): <root>/containerd, <state>/containerd,
// the socket <state>/containerd.sock, runc's root <state>/runc; it logs to
// logPath.
func NewContainerd(f ContainerdFlavour, root, state, logPath string) *Containerd {
	c := &Containerd{
		Flavour: f,
		Root:    filepath.Join(root, "containerd"), State: filepath.Join(state, "containerd"),
		Socket: filepath.Join(state, "containerd.sock"), RuncRoot: filepath.Join(state, "runc"),
	}
	c.Name, c.LogPath = f.Name, logPath
	return c
}

// WriteOfflineHosts sends docker.io, the registry of the test images, to
// OfflineServer: a pull (which no test asks for) fails locally.
func WriteOfflineHosts(dir string) error { return WriteHostsTOML(dir, "docker.io", OfflineServer) }

// WriteHostsTOML sends the registry host to server. containerd 1.6 rejects
// a hosts.toml without a [host] table (and then falls back to the real
// registry), so the server is named twice.
func WriteHostsTOML(dir, host, server string) error {
	hostDir := filepath.Join(dir, host)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, server)
	return os.WriteFile(filepath.Join(hostDir, "hosts.toml"), []byte(conf), 0o644)
}

// CheckOffline asks the CRI plugin for a pull, which must fail at
// OfflineServer: no image can come from the internet.
func (c *Containerd) CheckOffline() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ref = "docker.io/berth-test/absent:offline"
	_, err := c.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err == nil {
		return fmt.Errorf("pull of %s succeeded; want a failure at %s", ref, OfflineServer)
	}
	if !strings.Contains(err.Error(), strings.TrimPrefix(OfflineServer, "http://")) {
		return fmt.Errorf("pull of %s: %w; want a failure at %s", ref, err, OfflineServer)
	}
	return nil
}

// Launch starts containerd with its config (its flavour's binary, the
// flavour's shim directory first in PATH) and waits until its CRI plugin
// answers Version.
func (c *Containerd) Launch() error {
	c.Bin, c.Args, c.CleanExit = c.Flavour.Bin, []string{"--config", c.Config, "--log-level", "debug"}, true
	c.Env = c.Flavour.env()
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
func (c *Containerd) connect() error {
	if _, err := os.Stat(c.Socket); err != nil {
		return err
	}
	if c.Conn == nil {
		conn, err := grpc.NewClient(c.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		c.Conn, c.RT, c.Img = conn, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.RT.Version(ctx, &runtimeapi.VersionRequest{})
	return err
}

// Shutdown closes the clients and stops containerd with SIGTERM (its
// shims keep running, as they do in production).
func (c *Containerd) Shutdown() error {
	if c.Conn != nil {
		c.Conn.Close()
		c.Conn, c.RT, c.Img = nil, nil, nil
	}
	return c.Stop(30 * time.Second)
}

// Endpoint is the CRI endpoint, unix://<socket>.
func (c *Containerd) Endpoint() string { return "unix://" + c.Socket }

// ListAll lists every sandbox and container of the CRI plugin.
func (c *Containerd) ListAll(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	sbs, err := c.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, nil, err
	}
	ctrs, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, nil, err
	}
	return sbs.GetItems(), ctrs.GetContainers(), nil
}
