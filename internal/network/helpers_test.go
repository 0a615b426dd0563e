package network

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const pluginDir = "/usr/lib/cni"

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func randomInt(t testing.TB, max int64) int64 {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(max))
	if err != nil {
		t.Fatal(err)
	}
	return n.Int64()
}

// testNet is a bridge network private to one test: its own conf, cache and
// data dirs, bridge name and subnet.
type testNet struct {
	cni     *CNI
	def     DefaultNetwork
	subnet  *net.IPNet
	confDir string
}

// newTestNet installs a default network with a unique bridge and a free
// 10.x.y.0/24 subnet and removes the bridge when the test ends.
func newTestNet(t testing.TB) *testNet {
	t.Helper()
	requireRoot(t)
	root := t.TempDir()
	subnet := freeSubnet(t)
	def := DefaultNetwork{
		Name:    "bt" + randomHex(t, 4),
		Bridge:  "bt" + randomHex(t, 5),
		Subnet:  subnet.String(),
		DataDir: filepath.Join(root, "networks"),
	}
	confDir := filepath.Join(root, "net.d")
	if _, _, err := InstallDefault(confDir, def); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := net.InterfaceByName(def.Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "del", def.Bridge).CombinedOutput(); err != nil {
				t.Errorf("remove bridge %s: %v: %s", def.Bridge, err, out)
			}
		}
	})
	c := NewCNI(CNIConfig{ConfDir: confDir, BinDirs: []string{pluginDir}, CacheDir: filepath.Join(root, "cache")})
	return &testNet{cni: c, def: def, subnet: subnet, confDir: confDir}
}

// freeSubnet picks a 10.x.y.0/24 no host interface is using.
func freeSubnet(t testing.TB) *net.IPNet {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		_, n, _ := net.ParseCIDR(fmt.Sprintf("10.%d.%d.0/24", 100+randomInt(t, 150), randomInt(t, 256)))
		used := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (n.Contains(ipn.IP) || ipn.Contains(n.IP)) {
				used = true
			}
		}
		if !used {
			return n
		}
	}
	t.Fatal("no free 10.x.y.0/24 subnet")
	return nil
}

// testPod pins a network namespace for a new pod and registers its
// teardown and unpin.
func (tn *testNet) newPod(t testing.TB) (Attachment, string) {
	t.Helper()
	id := randomHex(t, 16)
	dir := filepath.Join(t.TempDir(), "ns")
	ns, err := Pin(PinOptions{Dir: dir, Net: true})
	if err != nil {
		t.Fatal(err)
	}
	a := Attachment{PodID: id, PodName: "p-" + id[:6], PodNamespace: "default", PodUID: "uid-" + id, NetnsPath: ns.Net}
	t.Cleanup(func() {
		if err := Unpin(dir); err != nil {
			t.Errorf("unpin: %v", err)
		}
	})
	t.Cleanup(func() {
		if err := tn.cni.Teardown(context.Background(), a); err != nil {
			t.Errorf("teardown in cleanup: %v", err)
		}
	})
	return a, dir
}

// allocationFile is host-local's record of an allocated IP.
func (tn *testNet) allocationFile(ip net.IP) string {
	return filepath.Join(tn.def.DataDir, tn.def.Name, ip.String())
}

// allocations lists host-local's allocated addresses of the test network.
func (tn *testNet) allocations(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(tn.def.DataDir, tn.def.Name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// bridgePorts counts the veths attached to the test bridge.
func (tn *testNet) bridgePorts(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/sys/class/net", tn.def.Bridge, "brif"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func nsenterNet(ctx context.Context, netns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + netns, "--"}, args...)...)
}

func iptablesSave(t testing.TB) map[string]bool {
	t.Helper()
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	lines := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "#") {
			lines[l] = true
		}
	}
	return lines
}

var cniChain = regexp.MustCompile(`CNI-[A-Za-z0-9-]+`)

// podChains returns the per-pod CNI chains that appeared between before and
// during on lines naming pod id. The shared CNI-HOSTPORT-* chains portmap
// keeps are not per pod.
func podChains(before, during map[string]bool, id string) map[string]bool {
	chains := map[string]bool{}
	for l := range during {
		if before[l] || !strings.Contains(l, id) {
			continue
		}
		for _, c := range cniChain.FindAllString(l, -1) {
			if !strings.HasPrefix(c, "CNI-HOSTPORT-") {
				chains[c] = true
			}
		}
	}
	return chains
}

// podLines returns the lines of snap, new since before, that name pod id or
// one of its chains.
func podLines(before, snap map[string]bool, id string, chains map[string]bool) []string {
	var out []string
	for l := range snap {
		if before[l] {
			continue
		}
		mine := strings.Contains(l, id)
		for c := range chains {
			mine = mine || strings.Contains(l, c)
		}
		if mine {
			out = append(out, l)
		}
	}
	return out
}

func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
