package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/criserver"
	"github.com/berth-dev/berth/internal/hostcgroup"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/pod"
	"github.com/berth-dev/berth/internal/registry"
	"github.com/berth-dev/berth/internal/sdnotify"
	"github.com/berth-dev/berth/internal/store"
	"github.com/berth-dev/berth/internal/stream"
	"github.com/berth-dev/berth/internal/unixsock"
)

func newServeCommand(opts *globalOptions) *cobra.Command {
	var agentOpts agentFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the CRI v1 runtime daemon on a unix socket",
		Long: `Run berth's CRI v1 runtime and image services on a unix socket.
Pods keep running when the daemon stops or is killed; on start it recovers
them from its records before it answers requests. The node agent ('berth run')
runs in the daemon on its own socket unless --agent=false.

SIGHUP re-reads the config file (log_level, [registry] and [images] apply at
once); SIGUSR1 writes every goroutine's stack to the log. The pid is in
<state>/berth.pid. Under systemd (Type=notify, contrib/systemd/berth.service)
it reports READY=1 once recovery is done.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agentOpts.validate(); err != nil {
				return err
			}
			cfg, err := opts.load(cmd)
			if err != nil {
				return err
			}
			if agentOpts.enabled { // a bad plugin config stops the start, not only the agent
				if _, err := agentOpts.credentials(nil); err != nil {
					return err
				}
			}
			return serve(cmd.Context(), cfg, func() (config.Config, error) { return opts.load(cmd) }, &agentOpts)
		},
	}
	cmd.Flags().BoolVar(&agentOpts.enabled, "agent", true, "run the node agent (berth run, apply, get ...) on this daemon's CRI socket")
	agentOpts.bind(cmd)
	return cmd
}

// serve runs the daemon until SIGTERM or SIGINT; SIGHUP reloads its
// configuration (load reads it as at start), SIGUSR1 writes its goroutines'
// stacks to stderr. Under systemd (Type=notify) it reports READY once
// recovery is done, RELOADING around a reload, STOPPING at the end, and
// pings the watchdog when the unit sets one.
func serve(ctx context.Context, cfg config.Config, load func() (config.Config, error), agentOpts *agentFlags) error {
	level := new(slog.LevelVar)
	level.Set(cfg.SlogLevel())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	notify := sdnotify.FromEnvironment(log) // before the first child process
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // from now on SIGHUP reloads, never kills
	defer signal.Stop(hup)
	defer dumpStacksOnSignal(os.Stderr)()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := checkCgroupDriver(cfg); err != nil {
		return err
	}
	runcInfo, err := resolveRunc(ctx, &cfg, log)
	if err != nil {
		return err
	}
	if err := makeDirs(cfg); err != nil {
		return err
	}
	unlock, err := lockStateDir(cfg.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	removePidFile, err := writePidFile(cfg.StateDir)
	if err != nil {
		return err
	}
	defer removePidFile()
	obs := newObservers(cfg)
	deps, err := wire(cfg, log, obs.phases)
	if err != nil {
		return err
	}
	deps.runc = runcInfo
	defer deps.pods.Close()
	stopMetrics, err := serveMetrics(cfg, obs, deps.pods, quarantine{deps.pods, deps.images}, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	stopProfiles, err := serveProfiles(cfg, log)
	if err != nil {
		return err
	}
	defer stopProfiles()
	streams, err := startStreams(cfg, deps, log)
	if err != nil {
		return err
	}
	defer streams.Close()
	rl := &reloader{load: load, running: cfg, level: level, images: deps.images, log: log, notify: notify}
	return serveCRI(ctx, cfg, deps, streams, obs, rl, hup, agentOpts)
}

// serveCRI recovers the pods, serves CRI (and the agent) until ctx ends,
// reloading on each value of hup, and stops the gRPC server.
func serveCRI(ctx context.Context, cfg config.Config, deps *dependencies, streams *stream.Server, obs observers,
	rl *reloader, hup <-chan os.Signal, agentOpts *agentFlags) error {
	log, notify := rl.log, rl.notify
	srv, g, served, err := startCRI(ctx, cfg, deps, streams, obs, log)
	if err != nil {
		return err
	}
	log.Info("berth serving; recovering state", "socket", cfg.Socket, "stream", streams.Addr(), "version", version)
	if err := deps.pods.Recover(ctx); err != nil {
		g.Stop()
		return err
	}
	srv.SetReady()
	log.Info("berth ready")
	notify.Ready("berth ready")
	stopWatchdog := startWatchdog(ctx, cfg, notify, log)
	defer stopWatchdog()
	stopAgent := runAgentInServe(ctx, cfg, agentOpts, deps.images, log)
	defer stopAgent()
	err = waitForStop(ctx, hup, served, rl)
	stopWatchdog() // no ping after STOPPING=1
	notify.Stopping("shutting down; pods keep running")
	if err != nil {
		return err
	}
	log.Info("shutting down; pods keep running")
	stopAgent()
	stopGRPC(g, 10*time.Second)
	return nil
}

// waitForStop reloads the configuration on each value of hup until ctx ends
// (nil) or the gRPC server fails.
func waitForStop(ctx context.Context, hup <-chan os.Signal, served <-chan error, rl *reloader) error {
	for {
		select {
		case <-hup:
			rl.reload()
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("grpc server: %w", err)
		}
	}
}

// startWatchdog pings the service manager's watchdog while the CRI socket
// answers; without a watchdog it does nothing. The returned func stops it.
func startWatchdog(ctx context.Context, cfg config.Config, notify *sdnotify.Notifier, log *slog.Logger) func() {
	interval := notify.WatchdogInterval()
	if interval == 0 {
		return func() {}
	}
	alive, closeConn, err := criAnswers(cfg.Socket, interval/2)
	if err != nil {
		log.Warn("systemd watchdog: pinging without a liveness check", "error", err)
		return notify.StartWatchdog(ctx, nil)
	}
	log.Info("systemd watchdog", "timeout", interval, "ping_every", interval/2)
	stop := notify.StartWatchdog(ctx, alive)
	return func() { stop(); closeConn() }
}

// startCRI builds the CRI server and serves it on the socket in the
// background; served receives the gRPC server's end.
func startCRI(ctx context.Context, cfg config.Config, deps *dependencies, streams *stream.Server, obs observers,
	log *slog.Logger) (*criserver.Server, *grpc.Server, <-chan error, error) {
	srv := criserver.New(criserver.Config{
		Sandboxes: deps.pods, Containers: deps.pods, Images: deps.images, Network: deps.network,
		Version: version, Logger: log,
		Stats: deps.pods, Events: deps.pods, Exec: deps.pods, Streaming: streams,
		RPCs: obs.rpcs, Quarantine: quarantine{deps.pods, deps.images}, Host: deps.pods, ContainerFs: deps.pods,
		RecursiveReadOnlyMounts: defaultRRO(deps.features[pod.DefaultHandler], log),
		UserNamespaces:          deps.userns[pod.DefaultHandler] == nil,
		OCIRuntime:              deps.runc,
		Handlers:                criHandlers(ctx, deps.handlers, deps.features, deps.userns, log),
		SystemdCgroup:           cfg.SystemdCgroup(),
	})
	lis, err := listen(cfg.Socket)
	if err != nil {
		return nil, nil, nil, err
	}
	g := grpc.NewServer(srv.GRPCOptions()...)
	srv.Register(g)
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	return srv, g, served, nil
}

// runAgentInServe starts the node agent beside the CRI server unless it is
// disabled; the returned func stops it and waits for it (idempotent).
func runAgentInServe(ctx context.Context, cfg config.Config, opts *agentFlags, store *image.Store, log *slog.Logger) func() {
	if !opts.enabled {
		return func() {}
	}
	agentCtx, cancel := context.WithCancel(ctx)
	wait := startAgentInServe(agentCtx, cfg, opts, store, log)
	var once sync.Once
	return func() { once.Do(func() { cancel(); wait() }) }
}

// checkCgroupDriver refuses cgroup_driver = "systemd" where systemd is not
// running: every container would fail at runc create otherwise.
func checkCgroupDriver(cfg config.Config) error {
	if !cfg.SystemdCgroup() {
		return nil
	}
	if err := hostcgroup.SystemdRunning(); err != nil {
		return fmt.Errorf("config key %q = %q: %w; use %q here", "cgroup_driver", cfg.CgroupDriver, err, config.CgroupDriverCgroupfs)
	}
	return nil
}

// makeDirs creates the root and state directories, root-only (berth owns
// them whole; the state directory may be traversed: store.TraversableDirMode),
// and the socket's directory when it is missing.
func makeDirs(cfg config.Config) error {
	if err := store.MkdirPrivate(cfg.RootDir); err != nil {
		return err
	}
	if err := store.MkdirTraversable(cfg.StateDir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Socket), store.PrivateDirMode); err != nil {
		return fmt.Errorf("directory %s: %w", filepath.Dir(cfg.Socket), err)
	}
	return nil
}

// startStreams starts the CRI streaming server (exec, attach,
// port-forward) in the background.
func startStreams(cfg config.Config, deps *dependencies, log *slog.Logger) (*stream.Server, error) {
	streams, err := stream.Listen(stream.Config{
		Address: cfg.Stream.Address, Containers: deps.pods, Sandboxes: deps.pods, Dial: network.DialInNamespace, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := streams.Serve(); err != nil {
			log.Error("stream server", "error", err)
		}
	}()
	return streams, nil
}

type dependencies struct {
	images   *image.Store
	network  *networkStatus
	pods     *pod.Service
	runc     criserver.OCIRuntime   // the runc in use, for Status
	handlers map[string]pod.Runtime // the other runtime handlers
	userns   map[string]error       // per handler: nil where pods may run in user namespaces
	features map[string]handlerFeatures
}

// wire builds the services from the configuration; phases may be nil.
func wire(cfg config.Config, log *slog.Logger, phases pod.PhaseObserver) (*dependencies, error) {
	runcPath, err := cfg.RuncBinary()
	if err != nil {
		return nil, err
	}
	monitorPath, err := cfg.MonitorBinary()
	if err != nil {
		return nil, err
	}
	pausePath, err := cfg.PauseBinary()
	if err != nil {
		return nil, err
	}
	images, err := openImageStore(cfg)
	if err != nil {
		return nil, err
	}
	images.SetLogger(log)
	images.ConfigurePull(pullConfig(cfg))
	warnAuthFile(cfg, log)
	netStatus, err := newNetworkStatus(cfg, log)
	if err != nil {
		return nil, err
	}
	controllers, err := hostcgroup.Detect()
	if err != nil {
		log.Warn("cgroup controllers unknown: resource settings go to runc as kubelet sends them", "error", err)
		controllers = hostcgroup.All()
	}
	log.Debug("cgroup controllers", "unified", controllers.Unified, "controllers", controllers.Names())
	devices, err := openCDI(cfg, log)
	if err != nil {
		return nil, err
	}
	handlers := runtimeHandlers(cfg, log)
	usernsIDs, err := usernsRange(cfg, log)
	if err != nil {
		return nil, err
	}
	features := runcFeatures(context.Background(), runcPath, handlers)
	usernsOK := usernsSupport(cfg, pausePath, features, log)
	pods, err := pod.New(pod.Config{
		RootDir: cfg.RootDir, StateDir: cfg.StateDir, Controllers: controllers,
		RuncPath: runcPath, RuncRoot: cfg.RuncRoot,
		MonitorPath: monitorPath, PausePath: pausePath,
		Images: images, Network: netStatus.cni, Logger: log, Phases: phases,
		SystemdCgroup: cfg.SystemdCgroup(), Devices: devices, Runtimes: handlers,
		UsernsRange: usernsIDs, UsernsSupport: usernsOK,
	})
	if err != nil {
		return nil, err
	}
	return &dependencies{images: images, network: netStatus, pods: pods, handlers: handlers, userns: usernsOK, features: features}, nil
}

// pullConfig is the image store's view of the [registry] section.
func pullConfig(cfg config.Config) image.PullConfig {
	return image.PullConfig{
		HostsDir:               cfg.Registry.HostsDir,
		MaxConcurrentDownloads: cfg.Registry.MaxConcurrentDownloads,
		MinThroughput:          cfg.Registry.MinThroughput,
		StallWindow:            cfg.Registry.StallWindowDuration(),
		AuthFile:               cfg.Registry.AuthFile,
	}
}

// warnAuthFile logs, at start and at each reload, why [registry]
// auth_file would be refused: every pull without credentials of its own
// fails until it is fixed (berth never falls back to anonymous pulls
// around a file it refuses).
func warnAuthFile(cfg config.Config, log *slog.Logger) {
	if err := registry.CheckAuthFile(cfg.Registry.AuthFile); err != nil {
		log.Error("pulls without credentials will fail", "error", err)
	}
}

// listen opens the CRI socket with mode 0660, replacing a stale one.
func listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: remove stale: %w", path, err)
	}
	return unixsock.Listen(path, 0o660)
}

// lockStateDir makes sure only one daemon uses a state directory.
func lockStateDir(dir string) (func(), error) {
	path := filepath.Join(dir, "berth.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// A predecessor that was just killed may hold the lock for a moment.
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: another berth serve uses this state directory: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopGRPC finishes in-flight RPCs, up to a deadline.
func stopGRPC(g *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		g.Stop()
	}
}

// defaultRRO says whether the default handler's runc makes recursive
// read-only mounts.
func defaultRRO(h handlerFeatures, log *slog.Logger) bool {
	if h.err != nil {
		log.Warn("runc features: mount options unknown", "error", h.err)
	}
	return h.mountOption("rro")
}
