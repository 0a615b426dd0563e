package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

// CNIConfig says where CNI configs, plugins and libcni's cache live.
type CNIConfig struct {
	ConfDir  string   // e.g. /etc/cni/net.d
	BinDirs  []string // searched in order, e.g. /opt/cni/bin, /usr/lib/cni
	CacheDir string   // libcni's result cache, e.g. <root>/cni/cache
}

// CNI attaches pods to the loopback network and to the pod network found in
// ConfDir. The config directory is read on every call, so a config that
// appears or changes is picked up without a restart.
type CNI struct {
	cfg  CNIConfig
	lib  *libcni.CNIConfig
	exec invoke.Exec
}

// NewCNI returns a CNI client for cfg.
func NewCNI(cfg CNIConfig) *CNI {
	cfg.BinDirs = append([]string(nil), cfg.BinDirs...)
	exec := &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}}
	return &CNI{
		cfg:  cfg,
		lib:  libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, exec),
		exec: exec,
	}
}

// loopbackNetworkName is the network berth attached every pod's lo to
// through the CNI loopback plugin before it brought lo up in-process
// (loopback.go); pods set up that way still hold a cached attachment of
// it, which Teardown deletes.
const loopbackNetworkName = "cni-loopback"

// configExtensions are the file types kubelet and containerd accept.
var configExtensions = []string{".conflist", ".conf", ".json"}

// errNoConfig tells that ConfDir holds no network config.
var errNoConfig = errors.New("no network config")

// Ready returns nil when pods can be networked, or an error whose message is
// the reason to show as NetworkNotReady.
func (c *CNI) Ready() error {
	list, _, err := c.podNetwork()
	if err != nil {
		return err
	}
	for _, p := range list.Plugins {
		if _, err := c.exec.FindInPath(p.Network.Type, c.cfg.BinDirs); err != nil {
			return fmt.Errorf("network %q: plugin %q not found in %v", list.Name, p.Network.Type, c.cfg.BinDirs)
		}
	}
	return nil
}

// podNetwork loads the first config file in ConfDir in lexical order.
func (c *CNI) podNetwork() (*libcni.NetworkConfigList, string, error) {
	path, err := firstConfigFile(c.cfg.ConfDir)
	if err != nil {
		return nil, "", err
	}
	list, err := loadConfigFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("network config %s: %w", path, err)
	}
	return list, path, nil
}

// firstConfigFile returns the config file kubelet would choose in dir.
func firstConfigFile(dir string) (string, error) {
	files, err := configFiles(dir)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("%w found in %s", errNoConfig, dir)
	}
	return files[0], nil
}

// configFiles lists dir's config files in lexical order; a missing dir has
// none.
func configFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("network config directory %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		for _, ext := range configExtensions {
			if strings.HasSuffix(e.Name(), ext) {
				files = append(files, filepath.Join(dir, e.Name()))
				break
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// loadConfigFile parses a .conflist, or a single-plugin .conf/.json, into a
// list.
func loadConfigFile(path string) (*libcni.NetworkConfigList, error) {
	if strings.HasSuffix(path, ".conflist") {
		list, err := libcni.NetworkConfFromFile(path)
		if err != nil {
			return nil, err
		}
		return list, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	single, err := libcni.NetworkPluginConfFromBytes(data)
	if err != nil {
		return nil, err
	}
	if single.Network.Name == "" {
		return nil, errors.New("no network name")
	}
	return libcni.ConfListFromConf(single) //nolint:staticcheck // single-plugin files are still what many hosts ship
}
