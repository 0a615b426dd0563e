package network

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/berth-dev/berth/internal/errdefs"
)

func testDefault(root string) DefaultNetwork {
	return DefaultNetwork{Name: "berth", Bridge: "berth0", Subnet: "10.88.0.0/16", DataDir: filepath.Join(root, "networks")}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadyReasons(t *testing.T) {
	root := t.TempDir()
	bins := []string{filepath.Join(root, "nobin"), pluginDir}
	ready := func(confDir string) error {
		return NewCNI(CNIConfig{ConfDir: confDir, BinDirs: bins, CacheDir: filepath.Join(root, "cache")}).Ready()
	}
	missing := filepath.Join(root, "missing")
	if err := ready(missing); err == nil || err.Error() != "no network config found in "+missing {
		t.Errorf("missing dir: %v", err)
	}
	empty := filepath.Join(root, "empty")
	writeFile(t, filepath.Join(empty, "README"), "not a config")
	if err := ready(empty); err == nil || err.Error() != "no network config found in "+empty {
		t.Errorf("empty dir: %v", err)
	}

	noPlugin := filepath.Join(root, "noplugin")
	writeFile(t, filepath.Join(noPlugin, "10-x.conflist"),
		`{"cniVersion":"1.0.0","name":"berth","plugins":[{"type":"loopback"},{"type":"nosuchplugin"}]}`)
	want := `network "berth": plugin "nosuchplugin" not found in [` + bins[0] + " " + bins[1] + `]`
	if err := ready(noPlugin); err == nil || err.Error() != want {
		t.Errorf("missing plugin: %v, want %s", err, want)
	}

	bad := filepath.Join(root, "bad")
	writeFile(t, filepath.Join(bad, "10-x.conflist"), `{"name": "x", "plugins": [`)
	writeFile(t, filepath.Join(bad, "20-good.conflist"), `{"cniVersion":"1.0.0","name":"g","plugins":[{"type":"loopback"}]}`)
	err := ready(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "network config "+filepath.Join(bad, "10-x.conflist")+": ") {
		t.Errorf("bad JSON: %v", err)
	}

	good := filepath.Join(root, "good")
	if _, _, err := InstallDefault(good, testDefault(root)); err != nil {
		t.Fatal(err)
	}
	if err := ready(good); err != nil {
		t.Errorf("installed default: %v", err)
	}
}

func TestReadyAcceptsSingleConf(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "05-lo.conf"), `{"cniVersion":"1.0.0","name":"lo-only","type":"loopback"}`)
	writeFile(t, filepath.Join(dir, "10-x.conflist"), `broken`)
	c := NewCNI(CNIConfig{ConfDir: dir, BinDirs: []string{pluginDir}})
	if err := c.Ready(); err != nil {
		t.Fatalf("Ready with a .conf first: %v", err)
	}
	list, path, err := c.podNetwork()
	if err != nil || list.Name != "lo-only" || filepath.Base(path) != "05-lo.conf" {
		t.Errorf("chosen network = %v %s %v, want lo-only from 05-lo.conf", list, path, err)
	}
}

func TestInstallDefault(t *testing.T) {
	root := t.TempDir()
	confDir := filepath.Join(root, "net.d")
	d := testDefault(root)
	path, installed, err := InstallDefault(confDir, d)
	if err != nil || !installed || path != filepath.Join(confDir, DefaultConfigFile) {
		t.Fatalf("InstallDefault = %q %v %v", path, installed, err)
	}
	list, err := libcni.NetworkConfFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if list.Name != "berth" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 2 ||
		list.Plugins[0].Network.Type != "bridge" || list.Plugins[1].Network.Type != "portmap" ||
		!list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Fatalf("installed config = %s", list.Bytes)
	}
	var bridge struct {
		Bridge                         string
		IsGateway, IPMasq, HairpinMode bool
		IPAM                           struct {
			Type    string
			DataDir string
			Ranges  [][]struct{ Subnet string }
			Routes  []struct{ Dst string }
		}
	}
	if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Bridge != "berth0" || !bridge.IsGateway || !bridge.IPMasq || !bridge.HairpinMode ||
		bridge.IPAM.Type != "host-local" || bridge.IPAM.DataDir != d.DataDir ||
		len(bridge.IPAM.Ranges) != 1 || bridge.IPAM.Ranges[0][0].Subnet != "10.88.0.0/16" ||
		len(bridge.IPAM.Routes) != 1 || bridge.IPAM.Routes[0].Dst != "0.0.0.0/0" {
		t.Errorf("bridge plugin config = %s", list.Plugins[0].Bytes)
	}

	// A second call, or any existing config, writes nothing.
	before, _ := os.ReadFile(path)
	writeFile(t, filepath.Join(confDir, "05-admin.conflist"), `{"cniVersion":"1.0.0","name":"admin","plugins":[{"type":"loopback"}]}`)
	path2, installed, err := InstallDefault(confDir, DefaultNetwork{Name: "other", Bridge: "b1", Subnet: "10.9.0.0/16", DataDir: "/x"})
	if err != nil || installed || path2 != filepath.Join(confDir, "05-admin.conflist") {
		t.Errorf("InstallDefault over an existing config = %q %v %v", path2, installed, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("berth's config changed although a config existed")
	}
	entries, _ := os.ReadDir(confDir)
	if len(entries) != 2 {
		t.Errorf("conf dir has %d entries, want 2", len(entries))
	}
}

func TestInstallDefaultLeavesAdminConfig(t *testing.T) {
	confDir := t.TempDir()
	writeFile(t, filepath.Join(confDir, "99-admin.json"), `{}`)
	if _, installed, err := InstallDefault(confDir, testDefault(confDir)); err != nil || installed {
		t.Fatalf("installed = %v, %v", installed, err)
	}
	if _, err := os.Stat(filepath.Join(confDir, DefaultConfigFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("default written beside an admin config: %v", err)
	}
}

func TestInstallDefaultRejectsBadInput(t *testing.T) {
	root := t.TempDir()
	for name, d := range map[string]DefaultNetwork{
		"bad cidr":      {Name: "n", Bridge: "b", Subnet: "10.0.0.0/33", DataDir: root},
		"no name":       {Bridge: "b", Subnet: "10.0.0.0/16", DataDir: root},
		"long bridge":   {Name: "n", Bridge: "averyveryverylongbridge", Subnet: "10.0.0.0/16", DataDir: root},
		"relative data": {Name: "n", Bridge: "b", Subnet: "10.0.0.0/16", DataDir: "data"},
	} {
		_, _, err := InstallDefault(filepath.Join(root, name), d)
		if !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
	if _, err := UpdateDefaultSubnet(root, "nonsense"); !errors.Is(err, errdefs.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "subnet") {
		t.Errorf("UpdateDefaultSubnet(nonsense) = %v", err)
	}
}

func TestUpdateDefaultSubnet(t *testing.T) {
	root := t.TempDir()
	confDir := filepath.Join(root, "net.d")
	if _, _, err := InstallDefault(confDir, testDefault(root)); err != nil {
		t.Fatal(err)
	}
	changed, err := UpdateDefaultSubnet(confDir, "10.244.1.0/24,fd00:10:244:1::/64")
	if err != nil || !changed {
		t.Fatalf("UpdateDefaultSubnet = %v, %v", changed, err)
	}
	data, _ := os.ReadFile(filepath.Join(confDir, DefaultConfigFile))
	for _, want := range []string{`"subnet": "10.244.1.0/24"`, `"subnet": "fd00:10:244:1::/64"`, `"dst": "::/0"`, `"bridge": "berth0"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("updated config lacks %s:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "10.88.0.0/16") {
		t.Errorf("old subnet still in config:\n%s", data)
	}
	if changed, err := UpdateDefaultSubnet(confDir, "10.244.1.0/24,fd00:10:244:1::/64"); err != nil || changed {
		t.Errorf("same subnet again = %v, %v; want unchanged", changed, err)
	}

	admin := filepath.Join(root, "admin")
	adminConf := `{"cniVersion":"1.0.0","name":"berth","plugins":[{"type":"bridge"}]}`
	writeFile(t, filepath.Join(admin, DefaultConfigFile), adminConf)
	if changed, err := UpdateDefaultSubnet(admin, "10.1.0.0/16"); err != nil || changed {
		t.Errorf("admin config: %v, %v; want untouched", changed, err)
	}
	if data, _ := os.ReadFile(filepath.Join(admin, DefaultConfigFile)); string(data) != adminConf {
		t.Errorf("admin config rewritten: %s", data)
	}
	if changed, err := UpdateDefaultSubnet(filepath.Join(root, "none"), "10.1.0.0/16"); err != nil || changed {
		t.Errorf("no config: %v, %v", changed, err)
	}
}
