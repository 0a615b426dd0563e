package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// DefaultNetwork describes the bridge network berth installs when the host
// has no CNI config at all.
type DefaultNetwork struct {
	Name    string `json:"name"`    // network name, e.g. "berth"
	Bridge  string `json:"bridge"`  // bridge interface, e.g. "berth0"
	Subnet  string `json:"subnet"`  // pod CIDR; a comma-separated list for dual stack
	DataDir string `json:"dataDir"` // host-local allocations, e.g. <root>/cni/networks
	// Masquerade is MasqueradeNftables when berth's node-wide rule
	// masquerades the pods' traffic to the outside; "" leaves it to the
	// bridge plugin's ipMasq, per pod.
	Masquerade string `json:"masquerade,omitempty"`
}

// DefaultConfigFile is the file name of berth's default network config.
const DefaultConfigFile = "10-berth.conflist"

// defaultMarkerKey is the top-level key marking the config as berth's own.
// It records the inputs, so the file can be regenerated with a new subnet.
const defaultMarkerKey = "berth"

// InstallDefault writes berth's default network into confDir, only when
// confDir holds no network config. It returns the config kubelet-style
// selection will use and whether it wrote it.
func InstallDefault(confDir string, d DefaultNetwork) (path string, installed bool, err error) {
	if err := d.validate(); err != nil {
		return "", false, err
	}
	existing, err := configFiles(confDir)
	if err != nil {
		return "", false, err
	}
	if len(existing) > 0 {
		return existing[0], false, nil
	}
	path = filepath.Join(confDir, DefaultConfigFile)
	if err := writeDefault(path, d); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// UpdateDefaultSubnet rewrites berth's default network config in confDir with
// a new pod CIDR, and its masquerade rules with it. A config that is not
// berth's own is left alone (changed=false): the admin's network decides
// its own addresses.
func UpdateDefaultSubnet(confDir, cidr string) (changed bool, err error) {
	if _, err := parseSubnets(cidr); err != nil {
		return false, err
	}
	path := filepath.Join(confDir, DefaultConfigFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	d, own, err := readDefault(path)
	if err != nil || !own || d.Subnet == cidr {
		return false, err
	}
	d.Subnet = cidr
	if err := d.validate(); err != nil {
		return false, fmt.Errorf("network config %s: %w", path, err)
	}
	return true, applyMasquerade(context.Background(), path, d)
}

func (d DefaultNetwork) validate() error {
	if d.Name == "" || strings.ContainsAny(d.Name, "/\x00") {
		return fmt.Errorf("default network: name %q: empty or has '/': %w", d.Name, errdefs.ErrInvalidArgument)
	}
	if d.Bridge == "" || len(d.Bridge) > 15 || strings.ContainsAny(d.Bridge, "/: \t\n\x00") {
		return fmt.Errorf("default network %s: bridge %q: not an interface name: %w", d.Name, d.Bridge, errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(d.DataDir) {
		return fmt.Errorf("default network %s: data dir %q: not an absolute path: %w", d.Name, d.DataDir, errdefs.ErrInvalidArgument)
	}
	if _, err := parseSubnets(d.Subnet); err != nil {
		return fmt.Errorf("default network %s: %w", d.Name, err)
	}
	if d.Masquerade != "" && d.Masquerade != MasqueradeNftables {
		return fmt.Errorf("default network %s: masquerade %q: want %q or none: %w", d.Name, d.Masquerade, MasqueradeNftables, errdefs.ErrInvalidArgument)
	}
	return nil
}

// parseSubnets parses one CIDR or a comma-separated list (at most one per
// family), normalised to network addresses.
func parseSubnets(cidr string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	seen := map[bool]bool{}
	for _, s := range strings.Split(cidr, ",") {
		_, n, err := net.ParseCIDR(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("subnet %q: not a CIDR: %w", cidr, errdefs.ErrInvalidArgument)
		}
		v4 := n.IP.To4() != nil
		if seen[v4] {
			return nil, fmt.Errorf("subnet %q: two subnets of one IP family: %w", cidr, errdefs.ErrInvalidArgument)
		}
		seen[v4] = true
		out = append(out, n)
	}
	return out, nil
}

// defaultConfig renders the conflist: a gateway bridge with hairpin (and
// the plugin's masquerade unless berth's node-wide rule does it),
// host-local IPAM with a default route, then portmap.
func defaultConfig(d DefaultNetwork) ([]byte, error) {
	subnets, err := parseSubnets(d.Subnet)
	if err != nil {
		return nil, err
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, n := range subnets {
		ranges = append(ranges, []map[string]string{{"subnet": n.String()}})
		dst := "0.0.0.0/0"
		if n.IP.To4() == nil {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	conf := map[string]any{
		"cniVersion":     "1.0.0",
		"name":           d.Name,
		defaultMarkerKey: d,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": d.Bridge,
				"isGateway": true, "ipMasq": d.Masquerade != MasqueradeNftables, "hairpinMode": true,
				"ipam": map[string]any{
					"type": "host-local", "dataDir": d.DataDir,
					"ranges": ranges, "routes": routes,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

func writeDefault(path string, d DefaultNetwork) error {
	data, err := defaultConfig(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network config %s: directory: %w", path, err)
	}
	if err := store.WriteFileAtomic(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("network config: %w", err)
	}
	return nil
}
