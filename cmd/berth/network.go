package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/store"
)

// networkStatus adapts CNI to the CRI edge: readiness and the pod CIDR.
type networkStatus struct {
	cni     *network.CNI
	confDir string
	log     *slog.Logger
}

// newNetworkStatus installs berth's default bridge network when the CNI
// config directory holds no network, and opens CNI.
func newNetworkStatus(cfg config.Config, log *slog.Logger) (*networkStatus, error) {
	// libcni's cache and host-local's allocations: the plugins make what
	// is below with modes of their own.
	if err := store.MkdirPrivate(filepath.Join(cfg.RootDir, "cni")); err != nil {
		return nil, err
	}
	path, installed, err := network.InstallDefault(cfg.CNI.ConfDir, network.DefaultNetwork{
		Name:    cfg.CNI.DefaultNetwork,
		Bridge:  cfg.CNI.DefaultBridge,
		Subnet:  cfg.CNI.DefaultSubnet,
		DataDir: filepath.Join(cfg.RootDir, "cni", "networks"),
	})
	if err != nil {
		return nil, fmt.Errorf("default CNI network: %w", err)
	}
	if installed {
		log.Info("installed default CNI network", "path", path, "bridge", cfg.CNI.DefaultBridge, "subnet", cfg.CNI.DefaultSubnet)
	}
	if _, err := network.PrepareDefault(context.Background(), cfg.CNI.ConfDir); err != nil {
		log.Warn("default CNI network", "error", err)
	}
	cni := network.NewCNI(network.CNIConfig{
		ConfDir:  cfg.CNI.ConfDir,
		BinDirs:  cfg.CNI.BinDirs,
		CacheDir: filepath.Join(cfg.RootDir, "cni", "cache"),
	})
	return &networkStatus{cni: cni, confDir: cfg.CNI.ConfDir, log: log}, nil
}

func (n *networkStatus) Ready() error { return n.cni.Ready() }

// UpdatePodCIDR rewrites berth's own default network with kubelet's pod CIDR;
// a network config written by someone else is left alone.
func (n *networkStatus) UpdatePodCIDR(cidr string) error {
	changed, err := network.UpdateDefaultSubnet(n.confDir, cidr)
	if changed && err != nil {
		// The config changed over to the plugin's per-pod masquerade.
		n.log.Warn("default CNI network", "error", err)
	} else if err != nil {
		return err
	}
	if changed {
		n.log.Info("default CNI network uses the new pod CIDR", "cidr", cidr)
	}
	return nil
}
