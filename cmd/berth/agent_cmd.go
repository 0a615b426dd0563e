package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/credprovider"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/podcgroup"
	"github.com/berth-dev/berth/internal/agent/userns"
	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/image"
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
	// kubelet's crashLoopBackOff.maxContainerRestartPeriod
	maxRestartPeriod time.Duration
	relistPeriod     time.Duration
	watchInterval    time.Duration
	// container log rotation (kubelet's containerLog* settings)
	logMaxSize         string // a quantity: "10Mi"
	logMaxFiles        int
	logMonitorInterval time.Duration
	logMaxWorkers      int
	logRotation        logrotate.Policy // validate's result
	eviction           evictionFlags
	// kubelet's credential provider plugins: their config and directory
	credProviderConfig string
	credProviderBinDir string
	pullVerification   pullVerificationFlags
	gc                 gcFlags
	node               nodeFlags
	services           serviceFlags
}

func (f *agentFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.podLogDir, "pod-log-dir", agent.DefaultPodLogDir, "root of the pods' log directories")
	fs.StringVar(&f.nodeName, "node-name", "", "spec.nodeName of the agent's pods (default: the host name)")
	fs.DurationVar(&f.backoffInitial, "backoff-initial", backoff.DefaultInitial, "first crash and image pull back-off delay")
	fs.DurationVar(&f.backoffMax, "backoff-max", backoff.DefaultMax, "longest back-off delay")
	fs.DurationVar(&f.backoffReset, "backoff-reset", backoff.DefaultResetAfter, "a container running this long starts its back-off afresh")
	fs.DurationVar(&f.maxRestartPeriod, "max-container-restart-period", backoff.DefaultContainerRestartPeriod,
		"longest crash back-off between a container's restarts, 1s to 300s (kubelet's crashLoopBackOff.maxContainerRestartPeriod)")
	fs.DurationVar(&f.relistPeriod, "relist-period", agent.DefaultRelistPeriod, "how often the agent lists the runtime's pods (safety net under its events)")
	fs.DurationVar(&f.watchInterval, "watch-interval", agent.DefaultWatchInterval, "rescan period of watched manifest directories (safety net under inotify)")
	fs.StringVar(&f.logMaxSize, "container-log-max-size", "10Mi", "a container's log larger than this is rotated (a quantity: 10Mi, 512Ki)")
	fs.IntVar(&f.logMaxFiles, "container-log-max-files", logrotate.DefaultMaxFiles, "files a container's log keeps, the current one counted (at least 2)")
	fs.DurationVar(&f.logMonitorInterval, "container-log-monitor-interval", logrotate.DefaultInterval, "how often the containers' log sizes are checked (at least 1s)")
	fs.IntVar(&f.logMaxWorkers, "container-log-max-workers", logrotate.DefaultWorkers, "containers' logs rotated at once")
	fs.StringVar(&f.credProviderConfig, "image-credential-provider-config", "",
		"kubelet's CredentialProviderConfig (kubelet.config.k8s.io/v1): exec plugins giving registry credentials for images no imagePullSecret matches")
	fs.StringVar(&f.credProviderBinDir, "image-credential-provider-bin-dir", "",
		"directory of the credential provider plugins named in --image-credential-provider-config")
	f.pullVerification.bind(fs)
	f.gc.bind(fs)
	f.eviction.bind(fs)
	f.node.bind(fs)
	f.services.bind(fs)
}

// validate checks the flags the agent's Config does not check itself, and
// says which flag is wrong.
func (f *agentFlags) validate() error {
	if err := backoff.ValidateMaxContainerRestartPeriod(f.maxRestartPeriod); err != nil {
		return fmt.Errorf("--max-container-restart-period: %w", err)
	}
	size, err := resource.ParseQuantity(f.logMaxSize)
	if err != nil {
		return fmt.Errorf("--container-log-max-size %q: %w", f.logMaxSize, err)
	}
	f.logRotation = logrotate.Policy{
		MaxSize: size.Value(), MaxFiles: f.logMaxFiles, Interval: f.logMonitorInterval, Workers: f.logMaxWorkers,
	}
	if err := f.logRotation.Validate(); err != nil {
		return fmt.Errorf("--container-log-* flags: %w", err)
	}
	if _, _, err := f.node.parse(); err != nil {
		return err
	}
	if _, err = f.gc.config(); err != nil {
		return err
	}
	if _, err = f.pullVerification.config(); err != nil {
		return err
	}
	_, err = f.services.config()
	return err
}

// credentials loads the credential provider plugins, if configured.
func (f *agentFlags) credentials(log *slog.Logger) (agent.CredentialSource, error) {
	if f.credProviderConfig == "" {
		return nil, nil
	}
	p, err := credprovider.Load(f.credProviderConfig, f.credProviderBinDir, log)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return p, nil
}

// config is the agent's configuration over a CRI client.
func (f *agentFlags) config(cfg config.Config, cri *criclient.CRIClient, log *slog.Logger) (agent.Config, error) {
	gc, err := f.gc.config()
	if err != nil {
		return agent.Config{}, err
	}
	labels, taints, err := f.node.parse()
	services, serr := f.services.config()
	verification, verr := f.pullVerification.config()
	return agent.Config{
		NodeLabels: labels, NodeTaints: taints, MaxPods: f.node.maxPods,
		Runtime: cri, Images: cri,
		RootDir:   filepath.Join(cfg.RootDir, "agent"),
		PodLogDir: f.podLogDir, NodeName: f.nodeName,
		// The pods' user namespaces: user berth's subordinate ids.
		SubUIDFile: userns.DefaultSubUIDFile, SubGIDFile: userns.DefaultSubGIDFile,
		Backoff:                   backoff.Config{Initial: f.backoffInitial, Max: f.backoffMax, ResetAfter: f.backoffReset},
		MaxContainerRestartPeriod: f.maxRestartPeriod,
		RelistPeriod:              f.relistPeriod,
		WatchInterval:             f.watchInterval,
		LogRotation:               f.logRotation,
		Logger:                    log,
		GC:                        gc,
		Services:                  services,
		// Kubelet's "ensure secret pulled images": records under
		// <root>/agent/pullrecords.
		PullVerification: verification,
	}, errors.Join(err, serr, verr)
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
			if err := flags.validate(); err != nil {
				return err
			}
			cfg, err := opts.load(cmd)
			if err != nil {
				return err
			}
			log := newLogger(cfg)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runAgent(ctx, cfg, &flags, runtimeEndpoint(cfg), nil, log)
		},
	}
	flags.bind(cmd)
	return cmd
}

// runAgent runs the agent and its API until ctx ends; pods keep running.
// images is the image store of the runtime at endpoint when it runs in
// this process (berth serve): the agent then sees its pulls' progress.
func runAgent(ctx context.Context, cfg config.Config, flags *agentFlags, endpoint string, images *image.Store, log *slog.Logger) error {
	evictionCfg, err := flags.eviction.config()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
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
	if err := store.MkdirTraversable(cfg.StateDir); err != nil {
		return fmt.Errorf("agent: state directory %s: %w", cfg.StateDir, err)
	}
	agentCfg, err := flags.config(cfg, cri, log)
	if err != nil {
		return err
	}
	if agentCfg.Credentials, err = flags.credentials(log); err != nil {
		return err
	}
	agentCfg.RuntimeName, agentCfg.SystemdCgroup = runtimeName, systemd
	features, err := cri.HandlerFeatures(ctx)
	if err != nil {
		return fmt.Errorf("agent: runtime %s: %w", endpoint, err)
	}
	agentCfg.RecursiveReadOnlyHandlers, agentCfg.UserNamespaceHandlers = features.RecursiveReadOnly, features.UserNamespaces
	agentCfg.PodCgroups = &podcgroup.Manager{Systemd: systemd, Log: log}
	agentCfg.Eviction = evictionCfg
	// The eviction manager measures with the runtime's stats; node-level
	// reclaim is the agent's image and container GC (agent.New's default
	// Reclaimer).
	agentCfg.Stats, agentCfg.Version = cri, version
	if v, err := cri.Version(ctx); err == nil {
		agentCfg.RuntimeVersion = v.GetRuntimeName() + "://" + v.GetRuntimeVersion()
	}
	if images != nil {
		agentCfg.Images = watchingImages{CRIClient: cri, store: images}
		warnReserveOverGC(log, cfg, images.Root(), flags.gc.imageHigh)
	}
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
func startAgentInServe(ctx context.Context, cfg config.Config, flags *agentFlags, store *image.Store, log *slog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runAgent(ctx, cfg, flags, "unix://"+cfg.Socket, store, log); err != nil {
			log.Error("agent stopped", "error", err)
		}
	}()
	return func() { <-done }
}

// watchingImages is the image service of the agent in berth serve: CRI
// over the daemon's socket, and the progress of the pulls its image store
// makes for them (criclient.PullWatcher), which CRI cannot carry.
type watchingImages struct {
	*criclient.CRIClient
	store *image.Store
}

var _ criclient.PullWatcher = watchingImages{}

func (w watchingImages) WatchPull(ref string, fn func(criclient.PullEvent)) (func(), error) {
	return w.store.WatchPulls(ref, func(p image.PullProgress) {
		fn(criclient.PullEvent{Layer: p.Layer, State: string(p.State), Done: p.Done, Total: p.Total})
	})
}
