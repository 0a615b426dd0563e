package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
)

// cniBinDir is where Debian installs the CNI plugins.
const cniBinDir = "/usr/lib/cni"

// systemRunc is the system's runc (Debian's), which berth serves as its
// runtime handler runc-system and containerd runs.
const systemRunc = harness.SystemRunc

// env is everything one bench run owns, all named after one random id.
type env struct {
	id      string // 6 hex digits
	binDir  string // berth, berth-monitor, berth-pause
	root    string // /var/lib/bb-<id>: the daemon's root_dir
	state   string // /run/bb-<id>: the daemon's state_dir
	work    string // <root>/bench: config, daemon log, image layout, pod logs
	confDir string // the daemon's CNI conf_dir, empty at start
	netName string // default_network
	cni     string // cniDefault or cniPlugins
	bridge  string // default_bridge
	subnet  *net.IPNet
	config  string // the daemon's config file
	floors  string // <state>/floors: runc root, bundles, namespace pins
	// metricsAddr is where the daemon serves /metrics (127.0.0.1, a free
	// port): the bench reads its store's fsync count there.
	metricsAddr string
}

// newEnv picks the names; it creates nothing.
func newEnv(binDir string) (*env, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("random id: %w", err)
	}
	id := hex.EncodeToString(b)
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	e := &env{
		id: id, binDir: binDir,
		root: "/var/lib/bb-" + id, state: "/run/bb-" + id,
		netName: "bb" + id, bridge: "bb" + id, subnet: subnet,
	}
	e.work = filepath.Join(e.root, "bench")
	e.confDir = filepath.Join(e.root, "net.d")
	e.config = filepath.Join(e.work, "config.toml")
	e.floors = filepath.Join(e.state, "floors")
	return e, nil
}

// freeSubnet picks a random 10.a.b.0/24 that no host address or route uses.
func freeSubnet() (*net.IPNet, error) {
	addrs, err := exec.Command("ip", "-o", "addr").Output()
	if err != nil {
		return nil, fmt.Errorf("ip addr: %w", err)
	}
	routes, err := exec.Command("ip", "route").Output()
	if err != nil {
		return nil, fmt.Errorf("ip route: %w", err)
	}
	for range 1000 {
		prefix := fmt.Sprintf("10.%d.%d.", 100+mrand.IntN(150), mrand.IntN(256))
		if bytes.Contains(addrs, []byte(prefix)) || bytes.Contains(routes, []byte(prefix)) {
			continue
		}
		_, n, err := net.ParseCIDR(prefix + "0/24")
		return n, err
	}
	return nil, errors.New("subnet: no free 10.a.b.0/24 in 1000 tries")
}

// prepare creates the directories and the daemon's config file: the
// pinned runc (bin/berth-runc) for the default handler, the system's runc
// for the handler runc-system.
func (e *env) prepare() error {
	if _, err := os.Stat(e.pinnedRunc()); err != nil {
		return fmt.Errorf("the pinned runc: %w (make runc-bin builds it)", err)
	}
	for _, dir := range []string{e.work, e.confDir, e.floors} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("directory %s: %w", dir, err)
		}
	}
	port, err := registry.FreePort()
	if err != nil {
		return fmt.Errorf("metrics port: %w", err)
	}
	e.metricsAddr = fmt.Sprintf("127.0.0.1:%d", port)
	conf := fmt.Sprintf(`root_dir = %q
state_dir = %q
socket = %q
log_level = "debug"
runc = %q
runc_root = %q

[cni]
conf_dir = %q
bin_dirs = [%q]
default_network = %q
default_bridge = %q
default_subnet = %q

[debug]
pprof_socket = %q

[metrics]
address = %q

[runtimes.%s]
runc = %q
`, e.root, e.state, e.socket(), e.pinnedRunc(), filepath.Join(e.state, "runc"), e.confDir, cniBinDir,
		e.netName, e.bridge, e.subnet.String(), e.pprofSocket(), e.metricsAddr, config.SystemRuncHandler, systemRunc)
	if err := os.WriteFile(e.config, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("config %s: %w", e.config, err)
	}
	if e.cni == cniPlugins {
		return writePluginList(e.confDir, e.netName, e.bridge, e.subnet.String(), filepath.Join(e.root, "cni", "networks"))
	}
	return nil
}

// cniDescription says which network berth runs, for the report.
func (e *env) cniDescription() string { return cniWords(e.cni) }

// cniWords says in words what a -cni value gives berth.
func cniWords(mode string) string {
	if mode == cniPlugins {
		return "-cni=plugins: the list each containerd gets, as an admin's config"
	}
	return "berth's default network, written by berth serve: in-process lo, one node-wide nftables masquerade, portmap only with host ports"
}

// berth's networks in the bench (-cni).
const (
	cniDefault = "default"
	cniPlugins = "plugins"
)

// writePluginList writes into dir the conflist the bench gives each
// containerd (internal/network.InstallDefault's, the plugins doing all:
// bridge with ipMasq and hairpin, host-local, portmap), without berth's
// marker: berth runs it as an admin's config, every plugin in it.
func writePluginList(dir, name, bridge, subnet, dataDir string) error {
	scratch, err := os.MkdirTemp("", "bench-cni-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	path, _, err := network.InstallDefault(scratch, network.DefaultNetwork{Name: name, Bridge: bridge, Subnet: subnet, DataDir: dataDir})
	if err != nil {
		return fmt.Errorf("CNI list: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("CNI list %s: %w", path, err)
	}
	delete(doc, "berth")
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-"+name+".conflist"), out, 0o644)
}

func (e *env) socket() string      { return filepath.Join(e.state, "berth.sock") }
func (e *env) pprofSocket() string { return filepath.Join(e.state, "pprof.sock") }
func (e *env) berthBin() string    { return filepath.Join(e.binDir, "berth") }
func (e *env) pinnedRunc() string  { return filepath.Join(e.binDir, "berth-runc") }
func (e *env) daemonLog() string   { return filepath.Join(e.work, "berth.log") }
func (e *env) runcRoot() string    { return filepath.Join(e.floors, "runc") }

// importImage writes the busybox test image as an OCI archive and imports it
// into the daemon's root.
func (e *env) importImage(archive string) error {
	cmd := exec.Command(e.berthBin(), "image", "import", "--config", e.config,
		"--root", e.root, "--state", e.state, archive)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("berth image import %s: %w\n%s", archive, err, out)
	}
	return nil
}

// layerDir returns the image's only unpacked layer: the floors' rootfs.
func (e *env) layerDir() (string, error) {
	dir := filepath.Join(e.root, "images", "layers")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("image layers %s: %w", dir, err)
	}
	if len(entries) != 1 {
		return "", fmt.Errorf("image layers %s: %d layers, want the busybox image's 1", dir, len(entries))
	}
	return filepath.Join(dir, entries[0].Name()), nil
}

// subnetPrefix is the subnet's first three octets with the trailing dot.
func (e *env) subnetPrefix() string {
	return strings.TrimSuffix(e.subnet.IP.String(), "0")
}
