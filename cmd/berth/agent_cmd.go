package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/store"
)

// agentFlags tune the agent, in `berth serve` and `berth agent`.
type agentFlags struct {
	enabled        bool // serve only: run the agent beside the CRI server
	podLogDir      string
	nodeName       string
	backoffInitial time.Duration
	backoffMax     time.Duration
	backoffReset   time.Duration
	relistPeriod   time.Duration
	watchInterval  time.Duration
	gc             gcFlags
}

func (f *agentFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.podLogDir, "pod-log-dir", agent.DefaultPodLogDir, "root of the pods' log directories")
	fs.StringVar(&f.nodeName, "node-name", "", "spec.nodeName of the agent's pods (default: the host name)")
	fs.DurationVar(&f.backoffInitial, "backoff-initial", backoff.DefaultInitial, "first crash and image pull back-off delay")
	fs.DurationVar(&f.backoffMax, "backoff-max", backoff.DefaultMax, "longest back-off delay")
	fs.DurationVar(&f.backoffReset, "backoff-reset", backoff.DefaultResetAfter, "a container running this long starts its back-off afresh")
	fs.DurationVar(&f.relistPeriod, "relist-period", agent.DefaultRelistPeriod, "how often the agent lists the runtime's pods (safety net under its events)")
	fs.DurationVar(&f.watchInterval, "watch-interval", agent.DefaultWatchInterval, "rescan period of watched manifest directories (safety net under inotify)")
	f.gc.bind(fs)
}

// check refuses flag values the agent would refuse, before anything starts.
func (f *agentFlags) check() error {
	_, err := f.gc.config()
	return err
}

// config is the agent's configuration over a CRI client.
func (f *agentFlags) config(cfg config.Config, cri *criclient.CRIClient, log *slog.Logger) (agent.Config, error) {
	gc, err := f.gc.config()
	return agent.Config{
		Runtime: cri, Images: cri,
		RootDir:   filepath.Join(cfg.RootDir, "agent"),
		PodLogDir: f.podLogDir, NodeName: f.nodeName,
		Backoff:       backoff.Config{Initial: f.backoffInitial, Max: f.backoffMax, ResetAfter: f.backoffReset},
		RelistPeriod:  f.relistPeriod,
		WatchInterval: f.watchInterval,
		Logger:        log,
		GC:            gc,
	}, err
}

func newAgentCommand(opts *globalOptions) *cobra.Command {
	var flags agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run only the node agent, against any CRI runtime (--runtime-endpoint)",
		Long: `Run the node agent alone: it runs the pods sent by 'berth run' and 'berth apply' on the
CRI runtime at --runtime-endpoint (berth's own socket by default; containerd's works too),
and serves the agent API on <state>/agent.sock. 'berth serve' runs the same agent itself
unless --agent=false.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flags.check(); err != nil {
				return err
			}
			cfg, err := opts.load(cmd)
			if err != nil {
				return err
			}
			log := newLogger(cfg)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runAgent(ctx, cfg, &flags, runtimeEndpoint(cfg), log)
		},
	}
	flags.bind(cmd)
	return cmd
}

// runAgent runs the agent and its API until ctx ends; pods keep running.
func runAgent(ctx context.Context, cfg config.Config, flags *agentFlags, endpoint string, log *slog.Logger) error {
	cri, err := criclient.Dial(endpoint)
	if err != nil {
		return err
	}
	defer cri.Close()
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	runtimeName, err := cri.WaitReady(waitCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("agent: runtime %s: %w", endpoint, err)
	}
	systemd, err := cri.SystemdCgroup(ctx)
	if err != nil {
		return fmt.Errorf("agent: runtime %s: %w", endpoint, err)
	}
	if err := store.MkdirPrivate(cfg.StateDir); err != nil {
		return fmt.Errorf("agent: state directory %s: %w", cfg.StateDir, err)
	}
	agentCfg, err := flags.config(cfg, cri, log)
	if err != nil {
		return err
	}
	agentCfg.RuntimeName, agentCfg.SystemdCgroup = runtimeName, systemd
	a, err := agent.New(agentCfg)
	if err != nil {
		return err
	}
	api, err := agentapi.ListenAPI(agentSocket(cfg), a, log)
	if err != nil {
		return err
	}
	defer api.Close()
	go func() {
		if err := api.Serve(); err != nil {
			log.Error("agent API", "error", err)
		}
	}()
	log.Info("agent serving", "socket", agentSocket(cfg), "runtime", endpoint)
	return a.Run(ctx)
}

// startAgentInServe runs the agent beside `berth serve`'s CRI server, on
// its socket; the returned wait returns once the agent has stopped (after
// ctx ended).
func startAgentInServe(ctx context.Context, cfg config.Config, flags *agentFlags, log *slog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runAgent(ctx, cfg, flags, "unix://"+cfg.Socket, log); err != nil {
			log.Error("agent stopped", "error", err)
		}
	}()
	return func() { <-done }
}
