package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Network is one daemon's CNI network: its own bridge, subnet and
// host-local data directory.
type Network struct {
	Name       string // network and bridge name, bt<6 hex>
	Bridge     string
	Subnet     *net.IPNet // 10.a.b.0/24
	DataDir    string     // host-local dataDir
	PluginType string     // "bridge" unless a test breaks it
}

func newTestNetwork(id, dataDir string) Network { return NewNetwork("bt", id, dataDir) }

// NewNetwork is a network named prefix+id (bridge too: at most 15
// characters) on a free subnet, its host-local data in dataDir.
func NewNetwork(prefix, id, dataDir string) Network {
	return Network{
		Name:       prefix + id,
		Bridge:     prefix + id,
		Subnet:     freeSubnet(),
		DataDir:    dataDir,
		PluginType: "bridge",
	}
}

// freeSubnet picks a random 10.a.b.0/24 that no host address or route uses.
func freeSubnet() *net.IPNet {
	used, _ := exec.Command("ip", "-o", "addr").Output()
	routes, _ := exec.Command("ip", "route").Output()
	for {
		a, b := 100+rand.IntN(150), rand.IntN(256)
		prefix := fmt.Sprintf("10.%d.%d.", a, b)
		if bytes.Contains(used, []byte(prefix)) || bytes.Contains(routes, []byte(prefix)) {
			continue
		}
		_, n, _ := net.ParseCIDR(prefix + "0/24")
		return n
	}
}

// Prefix is the subnet's first three octets with the trailing dot.
func (n Network) Prefix() string {
	return strings.TrimSuffix(n.Subnet.IP.String(), "0")
}

// Mentions reports whether s holds an address of the subnet.
func (n Network) Mentions(s string) bool {
	re := regexp.MustCompile(`(^|[^0-9])` + regexp.QuoteMeta(n.Prefix()))
	return re.MatchString(s)
}

// WriteConfig writes the network's conflist into dir.
func (n Network) WriteConfig(dir string) error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       n.Name,
		"plugins": []any{
			map[string]any{
				"type": n.PluginType, "bridge": n.Bridge, "isGateway": true, "ipMasq": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": n.DataDir,
					"ranges":  [][]map[string]string{{{"subnet": n.Subnet.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-"+n.Name+".conflist"), data, 0o644)
}

// Allocations lists the host-local files that hold an IP of this network.
func (n Network) Allocations() []string {
	entries, err := os.ReadDir(filepath.Join(n.DataDir, n.Name))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Name() == "lock" || strings.HasPrefix(e.Name(), "last_reserved_ip") {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// VethsOnBridge lists the links attached to the test bridge.
func (n Network) VethsOnBridge() []string {
	out, err := exec.Command("ip", "-o", "link", "show", "master", n.Bridge).Output()
	if err != nil {
		return nil
	}
	var links []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			links = append(links, name)
		}
	}
	return links
}

// IptablesRules lists the rules (as iptables-save prints them, prefixed with
// their table) that mention the subnet.
func (n Network) IptablesRules() []string {
	var rules []string
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "-A ") && n.Mentions(line) {
				rules = append(rules, table+": "+line)
			}
		}
	}
	return rules
}

var cniChain = regexp.MustCompile(`-j (CNI-[0-9a-f]{24})\b`)

// RemoveIptablesRules deletes the rules that mention the subnet and the
// per-pod CNI-<hash> chains they jump to.
func (n Network) RemoveIptablesRules() error {
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			continue
		}
		var deletes, chains []string
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "-A ") || !n.Mentions(line) {
				continue
			}
			if m := cniChain.FindStringSubmatch(line); m != nil {
				chains = append(chains, m[1])
			}
			deletes = append(deletes, "-D "+strings.TrimPrefix(line, "-A "))
		}
		if len(deletes) == 0 {
			continue
		}
		script := "*" + table + "\n" + strings.Join(deletes, "\n") + "\n"
		for _, c := range chains {
			script += "-F " + c + "\n-X " + c + "\n"
		}
		script += "COMMIT\n"
		cmd := exec.Command("iptables-restore", "--noflush")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore: %v: %s\n%s", err, out, script)
		}
	}
	return nil
}

// RemoveLinks deletes the veths on the bridge and the bridge itself.
func (n Network) RemoveLinks() {
	for _, l := range n.VethsOnBridge() {
		_ = exec.Command("ip", "link", "del", l).Run() // best effort
	}
	_ = exec.Command("ip", "link", "del", n.Bridge).Run() // may not exist
}
