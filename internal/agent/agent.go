package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/claims"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/eviction"
	"github.com/berth-dev/berth/internal/agent/imagegc"
	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/nodefit"
	"github.com/berth-dev/berth/internal/agent/probe"
	"github.com/berth-dev/berth/internal/agent/sourcestore"
	"github.com/berth-dev/berth/internal/agent/volume"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/store"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Config configures an Agent. Zero durations take the defaults below.
type Config struct {
	Runtime criclient.Runtime
	Images  criclient.Images
	// Credentials are node-wide registry credentials (kubelet's credential
	// provider plugins), used for an image none of the pod's
	// imagePullSecrets match; nil: none (the runtime's own, if any).
	Credentials CredentialSource
	// RuntimeName is the runtime's name from CRI Version ("berth",
	// "containerd"): container IDs in statuses read "<name>://<id>".
	RuntimeName string
	// RecursiveReadOnlyHandlers are the runtime handlers that make
	// recursive read-only mounts (CRI Status): a pod on one of them may
	// ask for recursiveReadOnly: Enabled.
	RecursiveReadOnlyHandlers map[string]bool
	// UserNamespaceHandlers are the runtime handlers the runtime lists
	// (CRI Status), true for those that run pods in user namespaces: a
	// pod with hostUsers: false needs one that does (package userns).
	UserNamespaceHandlers map[string]bool
	// SubUIDFile and SubGIDFile hold user berth's range of host ids for
	// the pods' user namespaces (/etc/subuid and /etc/subgid in
	// cmd/berth); both empty: kubelet's default range, no file read.
	// Allocations are kept in <RootDir>/userns.
	SubUIDFile, SubGIDFile string
	// SystemdCgroup is the runtime's cgroup driver (CRI RuntimeConfig):
	// pods' cgroup parents are then systemd slices (podspec.PodSlice).
	SystemdCgroup bool
	// PodCgroups makes, sizes and removes the pods' own cgroups, as
	// kubelet's pod container manager does (package podcgroup); nil: the
	// agent leaves them to the runtime (tests).
	PodCgroups PodCgroupManager
	// RootDir holds the agent's per-pod directories (volumes):
	// <RootDir>/pods/<uid>/volumes/..., and the pods' ConfigMaps and
	// Secrets: <RootDir>/sources/<uid>.json (package sourcestore), and the
	// Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs and Services: <RootDir>/workloads (workloadstore).
	RootDir string
	// PodLogDir is the root of the pods' log directories (kubelet's
	// /var/log/pods).
	PodLogDir string
	// NodeName is spec.nodeName of every pod; default: the host name.
	NodeName string
	// NodeLabels are the node's labels over kubelet's well-known ones
	// (--node-labels), NodeTaints its taints (--register-with-taints):
	// pods are admitted against them (package nodefit).
	NodeLabels map[string]string
	NodeTaints []v1.Taint
	// MaxPods is how many pods the node runs at once (kubelet's
	// --max-pods, its pods capacity); default nodefit.DefaultMaxPods.
	MaxPods int
	// Backoff tunes the crash and image pull back-off (default: kubelet's
	// 10 s doubling to 300 s, reset after 10 min without a crash).
	Backoff backoff.Config
	// MaxContainerRestartPeriod caps the crash back-off (kubelet's
	// crashLoopBackOff.maxContainerRestartPeriod, 1 s to 300 s; 0: 300 s),
	// below Backoff.Max; the first delay is at most that cap.
	MaxContainerRestartPeriod time.Duration
	// RelistPeriod is how often the agent lists the runtime's sandboxes
	// as a safety net under the event stream; default 10 s.
	RelistPeriod time.Duration
	// ProbeSecond is how long one second of a probe's timings lasts;
	// default time.Second (tests shorten it).
	ProbeSecond time.Duration
	// WatchInterval is the rescan period of watched manifest directories
	// (a safety net under inotify); default 10 s.
	WatchInterval time.Duration
	// LogRotation is when the running containers' logs are rotated
	// (package logrotate); zero fields take the kubelet's defaults (10 MiB,
	// 5 files, every 10 s, 1 worker).
	LogRotation logrotate.Policy
	// Clock is what the agent reads the time from and waits with (syncs'
	// timers, back-offs, the relist ticker, event resubscription, pod
	// events' times, deletion deadlines); default the real clock. Tests
	// pass a fake one. Crash back-off compares it with the exit times the
	// runtime reports, and probes keep their own real timers: both assume
	// wall time.
	Clock  clock.WithTicker
	Logger *slog.Logger

	// Eviction configures the eviction manager (package eviction): no
	// thresholds, no eviction (cmd/berth passes kubelet's defaults).
	Eviction eviction.Config
	// Stats measures the image filesystem and the pods' usage for
	// eviction; nil: no imagefs signals, and pods rank without usage.
	Stats criclient.Stats
	// Observer measures the eviction signals; default
	// eviction.HostObserver on RootDir's filesystem (nodefs) and Stats'
	// image filesystem.
	Observer SignalObserver
	// Reclaimer frees unused containers and images before pods are
	// evicted for disk; default: the agent's own image and container
	// garbage collection.
	Reclaimer NodeReclaimer
	// HousekeepingPeriod is how often the signals are measured; default
	// DefaultHousekeepingPeriod.
	HousekeepingPeriod time.Duration
	// Version and RuntimeVersion are the node's kubeletVersion and
	// containerRuntimeVersion ("containerd://1.7.24").
	Version, RuntimeVersion string
	// GC is the container and image garbage collection (gcconfig.go).
	GC GCConfig
	// Services configures the Services' addresses, DNS and host side
	// (services_config.go).
	Services ServicesConfig
	// PullVerification is kubelet's image pull credentials verification
	// (pullverify.go); records: <RootDir>/pullrecords.
	PullVerification PullVerificationConfig
}

// Defaults.
const (
	DefaultPodLogDir     = "/var/log/pods"
	DefaultRelistPeriod  = 10 * time.Second
	DefaultWatchInterval = 10 * time.Second
)

// Agent runs pods from Kubernetes manifests on a CRI runtime: one worker
// per pod uid reconciles what the runtime holds with what the pod asks
// for. The runtime's sandboxes carry the pods as applied (see podspec),
// the agent's source store their ConfigMaps and Secrets, and Run recovers
// them.
type Agent struct {
	cfg            Config
	log            *slog.Logger
	deps           *syncDeps // what every worker's sync uses
	logs           *logrotate.Manager
	imageGC        *imagegc.Manager
	relistRequests chan struct{}
	pressure       *pressure // the eviction manager's state
	createdAt      time.Time // when New made the agent: the node's creation
	// life is the agent's lifetime, the parent of every worker and watch:
	// New creates it, Run ends it when its own ctx ends. Workers started
	// by an API call (Apply) outlive the request, so they cannot take its
	// context; they take this one, never a context stored from Run.
	life    context.Context
	endLife context.CancelFunc

	mu         sync.Mutex
	started    bool           // Run was called
	ready      bool           // the pods are recovered: requests are served
	stopping   bool           // Run is returning: no worker or watch starts
	running    sync.WaitGroup // worker and watch goroutines
	workers    map[string]*podWorker
	current    map[string]string // "namespace/name" → uid of the pod that name stands for
	configMaps map[string]*configMapEntry
	secrets    map[string]*secretEntry
	watches    map[string]*dirWatch // watched directory → its watch
	// gone holds, by watched directory, what its scans found missing
	// (watchdir_absent.go): nothing leaves before a later scan confirms it.
	gone map[string]*dirAbsences
	// workloads holds the Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs by uid (saved in
	// workloadStore before the agent acts on them); workloadNames maps
	// "Kind namespace/name" to the uid of the object that name stands
	// for (objects being deleted have none).
	workloads      map[string]*workloadObj
	workloadNames  map[string]string
	workloadStore  *workloadstore.Store
	controllerWake chan struct{}
	// workerSeq counts the workers started (under mu): each one's seq.
	workerSeq uint64
	// controllerPass is held by a controller pass from its start to its
	// last pod made, the agent's lock being released between batches:
	// one pass runs at a time (taken before mu, never under it).
	controllerPass sync.Mutex
	// daemonBackoff holds back the deletion of a DaemonSet's failed pod
	// (keyed by the DaemonSet's uid), as the daemon set controller's
	// failedPodsBackoff does.
	daemonBackoff *backoff.Backoff
	claims        *claimSet // the PersistentVolumeClaims (claims.go wiring: pvcs.go)
	// services holds the Services by "namespace/name" (saved in
	// workloadStore too); svcHost is their host side, made with the first.
	services map[string]*serviceObj
	svcHost  *serviceHost
	svcLink  serviceLink // nil: package svcnet's (tests fake it)
	// hostAddrs lists the host's addresses by interface; nil: HostAddrs
	// (tests give their own).
	hostAddrs func() (map[string][]netip.Addr, error)
	// svcNft programs the Services' table (svcnft); nil: the nft binary
	// (tests pass knftables.NewFake).
	svcNft knftables.Interface
	// svcTable holds back a failed making of the Services' table.
	svcTable tableRetry
	// svcLeftovers finds other service interfaces' tables; nil: the
	// kernel's (none while svcNft is a fake).
	svcLeftovers leftoverTables
	// svcLeftoverSeen: other service interfaces' tables found without
	// their link, by name, and when (services_leftover.go).
	svcLeftoverSeen map[string]time.Time
}

// The agent API (package agentapi) serves an Agent.
var _ agentapi.PodService = (*Agent)(nil)

// New checks cfg and returns an agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	sourceStore, err := sourcestore.Open(filepath.Join(cfg.RootDir, "sources"))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	logs, err := newLogManager(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	workloadStore, err := workloadstore.Open(filepath.Join(cfg.RootDir, "workloads"))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	log := cfg.Logger.With("component", "agent")
	claimStore, err := openClaims(cfg, log)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		cfg: cfg, log: log, logs: logs,
		deps:           newSyncDeps(cfg, sourceStore, log),
		relistRequests: make(chan struct{}, 1),
		workers:        map[string]*podWorker{},
		current:        map[string]string{},
		configMaps:     map[string]*configMapEntry{},
		secrets:        map[string]*secretEntry{},
		watches:        map[string]*dirWatch{},
		gone:           map[string]*dirAbsences{},
		workloads:      map[string]*workloadObj{},
		workloadNames:  map[string]string{},
		workloadStore:  workloadStore,
		controllerWake: make(chan struct{}, 1),
		daemonBackoff:  backoff.New(daemonFailedBackoff),
		claims:         newClaimSet(claimStore),
		services:       map[string]*serviceObj{},
	}
	a.deps.statusChanged = a.wakeControllers
	if a.deps.userNamespaces, err = openUserNamespaces(cfg, log); err != nil {
		return nil, err
	}
	if a.deps.pullRecords, err = openPullRecords(cfg, log); err != nil {
		return nil, err
	}
	if m, ok := a.deps.volumes.(*volume.Manager); ok {
		m.Claims = a.claims
	}
	a.deps.volumes = claimVolumes{volumeManager: a.deps.volumes, claims: a.claims}
	a.imageGC, err = imagegc.New(imagegc.Config{
		Runtime: cfg.Runtime, Images: cfg.Images, Policy: *cfg.GC.Images, Period: cfg.GC.ImagePeriod,
		Needed: a.neededImages, Statfs: cfg.GC.Statfs, Clock: cfg.Clock, Logger: log,
		Collected: a.prunePullRecords,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.Reclaimer == nil {
		cfg.Reclaimer = gcReclaimer{Manager: a.imageGC, ContainerGC: a.ContainerGC()}
		a.cfg.Reclaimer = cfg.Reclaimer
	}
	a.life, a.endLife = context.WithCancel(context.Background())
	a.createdAt = cfg.Clock.Now()
	a.pressure = newPressure(cfg)
	a.deps.probes = probe.NewManager(cfg.Runtime, probe.Options{SecondsUnit: cfg.ProbeSecond, OnAttempt: a.probeAttempt})
	return a, nil
}

// openClaims opens the claims store; what it set aside or left unfinished
// is logged, not fatal.
func openClaims(cfg Config, log *slog.Logger) (*claims.Store, error) {
	claimStore, err := claims.Open(filepath.Join(cfg.RootDir, "claims"), cfg.Clock.Now)
	if err != nil {
		if claimStore == nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		log.Error("claims: records set aside or steps left unfinished", "error", err)
	}
	return claimStore, nil
}

// checked refuses a Config New cannot run with, makes the root directory
// and fills the defaults.
func (cfg Config) checked() (Config, error) {
	if cfg.Runtime == nil || cfg.Images == nil {
		return cfg, errors.New("agent: a runtime and an image service are required")
	}
	if cfg.RootDir == "" {
		return cfg, errors.New("agent: RootDir is required")
	}
	// Pod volumes (emptyDirs a container writes to) live below it.
	if err := store.MkdirPrivate(cfg.RootDir); err != nil {
		return cfg, fmt.Errorf("agent: %w", err)
	}
	if cfg.PodLogDir == "" {
		cfg.PodLogDir = DefaultPodLogDir
	}
	if !filepath.IsAbs(cfg.PodLogDir) { // as the kubelet's podLogsDir
		return cfg, fmt.Errorf("agent: pod log directory %q: must be an absolute path (the runtime writes there from its own working directory; logs are rotated and removed only beneath it)", cfg.PodLogDir)
	}
	if cfg.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("agent: node name: %w", err)
		}
		cfg.NodeName = host
	}
	if err := nodefit.ValidateLabels(cfg.NodeLabels); err != nil {
		return cfg, fmt.Errorf("agent: %w", err)
	}
	if d := cfg.MaxContainerRestartPeriod; d != 0 {
		if err := backoff.ValidateMaxContainerRestartPeriod(d); err != nil {
			return cfg, fmt.Errorf("agent: %w", err)
		}
	}
	return cfg.withDefaults(), nil
}

// withDefaults fills the optional fields New leaves to defaults.
func (cfg Config) withDefaults() Config {
	if cfg.RelistPeriod <= 0 {
		cfg.RelistPeriod = DefaultRelistPeriod
	}
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = DefaultWatchInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Services = cfg.Services.withDefaults()
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.HousekeepingPeriod <= 0 {
		cfg.HousekeepingPeriod = DefaultHousekeepingPeriod
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = nodefit.DefaultMaxPods
	}
	if cfg.Observer == nil {
		cfg.Observer = hostObserver(cfg)
	}
	cfg.GC = cfg.GC.withDefaults()
	return cfg
}

// newSyncDeps is what every pod worker of the agent syncs with.
func newSyncDeps(cfg Config, sources *sourcestore.Store, log *slog.Logger) *syncDeps {
	return &syncDeps{
		runtime:       cfg.Runtime,
		images:        cfg.Images,
		credentials:   cfg.Credentials,
		volumes:       &volume.Manager{Root: cfg.RootDir},
		sources:       sources,
		crashBackoff:  backoff.New(cfg.Backoff.CrashLoop(cfg.MaxContainerRestartPeriod)),
		pullBackoff:   backoff.New(cfg.Backoff),
		clock:         cfg.Clock,
		log:           log,
		node:          readNode(),
		runtimeName:   cfg.RuntimeName,
		rroHandlers:   cfg.RecursiveReadOnlyHandlers,
		systemdCgroup: cfg.SystemdCgroup,
		podCgroups:    cfg.PodCgroups,
		rootDir:       cfg.RootDir,
		podLogDir:     cfg.PodLogDir,
		containerGC:   *cfg.GC.Containers,
		svcPods:       newServicePods(),
		sandboxSlots:  make(chan struct{}, sandboxesAtOnce()),
	}
}

// Run recovers the pods the runtime holds, then keeps every pod in sync
// until ctx ends. The pods keep running after Run returns.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("agent: Run called twice")
	}
	a.started = true
	a.mu.Unlock()
	defer a.endLife()
	a.recoverPullRecords(ctx)
	if err := a.recoverPods(ctx); err != nil {
		return err
	}
	var loops sync.WaitGroup
	for _, loop := range []func(context.Context){
		a.runControllers, a.housekeepingLoop, a.watchEvents, a.logs.Run, a.relistLoop,
		a.dispatchProbeUpdates, a.containerGCLoop, a.imageGC.Run,
	} {
		loops.Add(1)
		go func() { defer loops.Done(); loop(ctx) }()
	}
	<-ctx.Done()
	a.mu.Lock()
	a.ready, a.stopping = false, true // no goroutine starts after this
	a.mu.Unlock()
	a.endLife() // the workers and watches stop
	a.deps.probes.Close()
	loops.Wait()
	a.running.Wait()
	a.closeServiceHost()
	return nil
}

// startWorkerLocked runs a worker for desired (the caller holds a.mu).
func (a *Agent) startWorkerLocked(desired desiredPod) *podWorker {
	w := newPodWorker(a.deps, desired)
	a.workerSeq++
	w.seq = a.workerSeq
	a.workers[w.uid] = w
	a.current[desired.key()] = w.uid
	if a.stopping {
		return w
	}
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		if finished := w.run(a.life); finished {
			a.forget(w)
		}
	}()
	return w
}

// worker returns the worker of a pod uid, or nil.
func (a *Agent) worker(uid string) *podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.workers[uid]
}

// workerList returns every worker.
func (a *Agent) workerList() []*podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		out = append(out, w)
	}
	return out
}

// forget drops a worker whose pod is gone.
func (a *Agent) forget(w *podWorker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers[w.uid] == w {
		delete(a.workers, w.uid)
	}
	key := w.snapshotPod().Namespace + "/" + w.snapshotPod().Name
	if a.current[key] == w.uid {
		delete(a.current, key)
	}
	a.deps.probes.RemovePod(w.uid)
	notThisPod := func(key string) bool { return !strings.HasPrefix(key, w.uid+"/") }
	now := a.deps.clock.Now()
	a.deps.crashBackoff.GC(now, notThisPod)
	a.deps.pullBackoff.GC(now, notThisPod)
	a.wakeControllers() // its room may let a waiting pod be scheduled
}
