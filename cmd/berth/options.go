package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/config"
)

// globalOptions are the flags every command shares: they override the
// config file.
type globalOptions struct {
	configPath string
	rootDir    string
	stateDir   string
	socket     string
	logLevel   string
	runc       string
	cniConfDir string
	cniBinDirs []string
}

func (o *globalOptions) bind(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.configPath, "config", config.DefaultPath, "config file (TOML)")
	f.StringVar(&o.rootDir, "root", "", "durable state directory (default /var/lib/berth)")
	f.StringVar(&o.stateDir, "state", "", "volatile state directory (default /run/berth)")
	f.StringVar(&o.socket, "socket", "", "CRI socket path (default <state>/berth.sock)")
	f.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error")
	f.StringVar(&o.runc, "runc", "", "runc binary")
	f.StringVar(&o.cniConfDir, "cni-conf-dir", "", "CNI network config directory")
	f.StringSliceVar(&o.cniBinDirs, "cni-bin-dir", nil, "CNI plugin directories (repeatable)")
}

// load reads the config file, applies the flags and validates the result.
func (o *globalOptions) load(cmd *cobra.Command) (config.Config, error) {
	explicit := cmd.Flags().Changed("config")
	cfg, err := config.Load(o.configPath, explicit)
	if err != nil {
		return cfg, err
	}
	for _, kv := range []struct {
		dst *string
		val string
	}{
		{&cfg.RootDir, o.rootDir}, {&cfg.StateDir, o.stateDir}, {&cfg.Socket, o.socket},
		{&cfg.LogLevel, o.logLevel}, {&cfg.RuncPath, o.runc}, {&cfg.CNI.ConfDir, o.cniConfDir},
	} {
		if kv.val != "" {
			*kv.dst = kv.val
		}
	}
	if len(o.cniBinDirs) > 0 {
		cfg.CNI.BinDirs = o.cniBinDirs
	}
	if o.stateDir != "" && o.socket == "" {
		cfg.Socket = ""
		cfg.RuncRoot = ""
	}
	cfg.ApplyDefaults()
	return cfg, cfg.Validate()
}

func newLogger(cfg config.Config) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()}))
}
