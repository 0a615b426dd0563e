package containerd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// hostDirs are directories outside the test's own that containerd 1.6
// creates when missing: the shims' sockets (/run/containerd/s is fixed in
// the shim) and libcni's result cache (the CRI plugin sets no cache dir).
// The cleanup removes those the test created, once empty.
var hostDirs = []string{"/run/containerd/s", "/run/containerd", "/var/lib/cni/results", "/var/lib/cni"}

// skipReason says why the test cannot run here, or "".
func skipReason() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	for _, bin := range []string{containerdBin, ctrBin, shimBin, runcBin} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Sprintf("%s missing (Debian package containerd / runc): %v", bin, err)
		}
	}
	return harness.SkipReason()
}

// env is one run of the test: a private containerd, a berth agent on its
// socket, their directories and network, and what was seen of them.
type env struct {
	t         *testing.T
	id        string // 6 hex digits in every name the test gives
	root      string // /var/lib/bt-ctrd-<id>
	state     string // /run/bt-ctrd-<id>
	tmp       string // configs, archives, logs, binaries, manifests
	binDir    string
	podLogDir string // the agent's --pod-log-dir
	berthConf string // berth's config file (no host config is read)
	net       harness.Network
	ctrd      *containerd
	agent     *daemon
	seen      seenObjects
	// absentHostDirs are the hostDirs that did not exist at the start.
	absentHostDirs []string
}

// newEnv picks the names and the subnet and registers the cleanup; setup
// starts things.
func newEnv(t *testing.T) *env {
	id := harness.RandomHex(6)
	subnet, err := freeSubnet()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		t: t, id: id,
		root:  "/var/lib/bt-ctrd-" + id,
		state: "/run/bt-ctrd-" + id,
		tmp:   t.TempDir(),
		seen:  newSeenObjects(),
	}
	e.net = harness.Network{
		Name: "btc" + id, Bridge: "btc" + id, Subnet: subnet,
		DataDir: filepath.Join(e.root, "cni-ipam"), PluginType: "bridge",
	}
	e.binDir = filepath.Join(e.tmp, "bin")
	e.podLogDir = filepath.Join(e.tmp, "pod-logs")
	e.ctrd = &containerd{
		root: filepath.Join(e.root, "containerd"), state: filepath.Join(e.state, "containerd"),
		socket: filepath.Join(e.state, "containerd.sock"), runcRoot: filepath.Join(e.state, "runc"),
	}
	e.ctrd.logPath = filepath.Join(e.tmp, "containerd.log")
	e.agent = &daemon{name: "berth agent", logPath: filepath.Join(e.tmp, "agent.log")}
	for _, d := range hostDirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			e.absentHostDirs = append(e.absentHostDirs, d)
		}
	}
	t.Cleanup(e.cleanup)
	return e
}

// setup builds berth and the images, starts containerd and the agent.
func (e *env) setup() {
	t := e.t
	if err := harness.BuildBinaries(filepath.Join("..", ".."), e.binDir); err != nil {
		t.Fatalf("build berth: %v", err)
	}
	if err := e.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrd.launch(); err != nil {
		t.Fatalf("%v\n%s", err, e.ctrd.logTail(40))
	}
	if err := e.ctrd.checkOffline(); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrd.importImages(e.tmp, filepath.Join(e.binDir, "berth-pause")); err != nil {
		t.Fatalf("images: %v\n%s", err, e.ctrd.logTail(40))
	}
	e.startAgent(t)
}

// writeConfigs writes the CNI conflist, containerd's config and registry
// hosts, and berth's config.
func (e *env) writeConfigs() error {
	cniConf := filepath.Join(e.tmp, "net.d")
	if err := e.net.WriteConfig(cniConf); err != nil {
		return fmt.Errorf("CNI config: %w", err)
	}
	hosts := filepath.Join(e.tmp, "certs.d")
	if err := writeOfflineHosts(hosts); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	if err := e.ctrd.writeConfig(e.tmp, ctrdSettings{cniConfDir: cniConf, hostsDir: hosts}); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	var err error
	e.berthConf, err = harness.WriteOfflineConfig(e.tmp, busyboxRef)
	return err
}

// freeSubnet picks a random 10.a.b.0/24 that no host address or route
// uses. a stays within 20..99, below the range test/harness picks from,
// so that a concurrent berth test cannot take the same subnet.
func freeSubnet() (*net.IPNet, error) {
	addrs, _ := exec.Command("ip", "-o", "addr").Output()
	routes, _ := exec.Command("ip", "route").Output()
	for range 1000 {
		_, subnet, _ := net.ParseCIDR(fmt.Sprintf("10.%d.%d.0/24", 20+rand.IntN(80), rand.IntN(256)))
		n := harness.Network{Subnet: subnet}
		if !n.Mentions(string(addrs)) && !n.Mentions(string(routes)) {
			return subnet, nil
		}
	}
	return nil, errors.New("no free 10.x.y.0/24 subnet found")
}
