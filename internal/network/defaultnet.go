package network

import (
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
// a new pod CIDR. A config that is not berth's own is left alone
// (changed=false): the admin's network decides its own addresses.
func UpdateDefaultSubnet(confDir, cidr string) (changed bool, err error) {
	if _, err := parseSubnets(cidr); err != nil {
		return false, err
	}
	path := filepath.Join(confDir, DefaultConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("network config %s: %w", path, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return false, nil // not ours: berth writes valid JSON
	}
	raw, ok := doc[defaultMarkerKey]
	if !ok {
		return false, nil
	}
	var d DefaultNetwork
	if err := json.Unmarshal(raw, &d); err != nil {
		return false, fmt.Errorf("network config %s: key %q: %w", path, defaultMarkerKey, err)
	}
	if d.Subnet == cidr {
		return false, nil
	}
	d.Subnet = cidr
	if err := d.validate(); err != nil {
		return false, fmt.Errorf("network config %s: %w", path, err)
	}
	if err := writeDefault(path, d); err != nil {
		return false, err
	}
	return true, nil
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

// defaultConfig renders the conflist: a gateway bridge with masquerade and
// hairpin, host-local IPAM with a default route, then portmap.
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
				"isGateway": true, "ipMasq": true, "hairpinMode": true,
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
