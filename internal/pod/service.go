package pod

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth-dev/berth/internal/cdidevice"
	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/hostcgroup"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/runc"
	"github.com/berth-dev/berth/internal/store"
	"github.com/berth-dev/berth/internal/userns"
)

// Images is what the pod service needs of the image store.
type Images interface {
	Resolve(ref string) (image.Image, error)
	LayerPaths(img image.Image) ([]string, error)
}

// Network is what the pod service needs of CNI.
type Network interface {
	Setup(ctx context.Context, a network.Attachment) (*network.Result, error)
	Teardown(ctx context.Context, a network.Attachment) error
}

// Devices resolves the CDI devices a container asks for and applies their
// edits to its spec (package cdidevice).
type Devices interface {
	Check(reqs []cdidevice.Request) error
	Inject(spec *specs.Spec, reqs []cdidevice.Request) error
}

// Config wires a Service. Zero values of the optional fields mean "default".
type Config struct {
	RootDir     string // durable records: <root>/sandboxes, <root>/containers
	StateDir    string // volatile: pods, bundles, exits, monitors
	RuncPath    string
	RuncRoot    string
	MonitorPath string
	PausePath   string
	Images      Images
	Network     Network
	Logger      *slog.Logger
	// HostResolvConf is copied into pods that give no DNS config (default /etc/resolv.conf).
	HostResolvConf string
	// Phases, when set, observes the steps of sandbox and container starts.
	Phases PhaseObserver
	// Controllers are the host's usable cgroup controllers; settings of
	// others are left out of specs. The zero value has them all.
	Controllers hostcgroup.Controllers
	// SystemdCgroup is cgroup_driver = "systemd": cgroup parents are slices,
	// specs get <slice>:berth:<id> cgroupsPaths and runc runs with
	// --systemd-cgroup.
	SystemdCgroup bool
	// Devices, when set, gives containers the CDI devices they ask for;
	// without it a container that asks for one is refused.
	Devices Devices
	// Runtimes are the runtime handlers beside DefaultHandler (RuncPath,
	// RuncRoot), by name: a sandbox's runtime_handler picks one, and all
	// its containers run with that runc.
	Runtimes map[string]Runtime
	// UsernsRange is where pods' user namespace mappings may lie on the
	// host (the zero value: anywhere but the host's root).
	UsernsRange userns.Range
	// UsernsSupport says, per handler name (DefaultHandler for the
	// default), whether pods may run in user namespaces: nil when its runc
	// and the host can, the reason when not. A handler not listed cannot.
	UsernsSupport map[string]error
}

// Service runs sandboxes and containers. Create it with New, then call Recover
// once before serving requests.
type Service struct {
	cfg Config
	log *slog.Logger

	// The seams to runc, the pod monitors and the host (seams.go):
	// runtime is the default handler's runc, runtimes the others' by name
	// (runtimeFor picks).
	runtime  containerRuntime
	runtimes map[string]containerRuntime
	monitors podMonitors
	calls    monitorCalls
	host     podHost
	// cgroupRoot is where cgroup hierarchies are mounted (/sys/fs/cgroup).
	cgroupRoot string
	// cgroupRemoveWait bounds how long a deleted container's cgroup may
	// still hold an exiting task before berth reports it left behind.
	cgroupRemoveWait time.Duration

	sandboxNames   *store.Registrar
	containerNames *store.Registrar
	sandboxIDs     *store.IDIndex
	containerIDs   *store.IDIndex

	mu         sync.RWMutex
	sandboxes  map[string]*sandboxEntry
	containers map[string]*containerEntry
	// userns are the user namespace mappings pods hold (userns.go).
	userns usernsLeases
	// imagesInUse counts the creates in flight per image id.
	imagesInUse map[string]int

	oomScoreAdjMin int
	oomClampLogged atomic.Bool
	exitWatcher    *exitWatcher
	watches        monitorWatches
	outputs        outputHolds
	quarantine     quarantineSet
	events         EventBroker
	starts         eventOrder
	cpuRates       cgroupstats.RateTracker
	layersUsage    layersUsageCache
	dropped        droppedResources
}

// sandboxEntry holds one sandbox record. op serializes the sandbox's own
// lifecycle operations (stop, remove: the write side) against the creation
// of its containers (the read side: creates run side by side); mu guards
// rec and is held only briefly.
type sandboxEntry struct {
	op sync.RWMutex
	// write serializes the record's updates (read, change, write to disk,
	// publish); mu guards rec and is held only to copy or swap it, never
	// across the disk write, so that readers (status, list: kubelet's
	// relist of every container) never wait for a flush.
	write sync.Mutex
	mu    sync.RWMutex
	rec   Sandbox
	// stopping is set once a stop has begun: berth-pause's exit is then
	// expected, not news.
	stopping atomic.Bool
}

// containerEntry holds one container record; exited is closed once the
// container's exit has been recorded.
type containerEntry struct {
	op     sync.Mutex
	write  sync.Mutex // as sandboxEntry's
	mu     sync.RWMutex
	rec    Container
	exited chan struct{}
}

// New checks the configuration and prepares the directories.
func New(cfg Config) (*Service, error) {
	if cfg.RootDir == "" || cfg.StateDir == "" {
		return nil, fmt.Errorf("pod service: root and state dirs: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Images == nil || cfg.Network == nil {
		return nil, fmt.Errorf("pod service: images and network are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RuncRoot == "" {
		cfg.RuncRoot = filepath.Join(cfg.StateDir, "runc")
	}
	if cfg.HostResolvConf == "" {
		cfg.HostResolvConf = "/etc/resolv.conf"
	}
	s := &Service{
		cfg:              cfg,
		log:              cfg.Logger,
		runtime:          &runc.Runc{Path: cfg.RuncPath, Root: cfg.RuncRoot, SystemdCgroup: cfg.SystemdCgroup},
		runtimes:         newRuntimes(cfg),
		monitors:         monitorClients{},
		calls:            monitorClients{},
		host:             hostOps{},
		cgroupRoot:       "/sys/fs/cgroup",
		cgroupRemoveWait: 2 * time.Second,
		sandboxNames:     store.NewRegistrar(),
		containerNames:   store.NewRegistrar(),
		sandboxIDs:       store.NewIDIndex(),
		containerIDs:     store.NewIDIndex(),
		sandboxes:        map[string]*sandboxEntry{},
		containers:       map[string]*containerEntry{},
		imagesInUse:      map[string]int{},
		oomScoreAdjMin:   ownOOMScoreAdj(),
	}
	dirs := []string{s.sandboxesDir(), s.containersDir(), s.podsDir(), s.bundlesDir(), s.exitsDir(), s.monitorsDir(), cfg.RuncRoot}
	for name, r := range cfg.Runtimes {
		if name == DefaultHandler || name == "" || r.RuncPath == "" || r.RuncRoot == "" || r.RuncRoot == cfg.RuncRoot {
			return nil, fmt.Errorf("pod service: runtime handler %q: a name of its own, a runc and a root of its own: %w", name, errdefs.ErrInvalidArgument)
		}
		dirs = append(dirs, r.RuncRoot)
	}
	for _, dir := range dirs {
		if err := store.MkdirPrivate(dir); err != nil {
			return nil, fmt.Errorf("pod service: %w", err)
		}
	}
	if err := store.MkdirTraversable(s.usernsDir()); err != nil {
		return nil, fmt.Errorf("pod service: %w", err)
	}
	return s, nil
}

// Close stops watching exits. Pods and monitors keep running.
func (s *Service) Close() {
	if s.exitWatcher != nil {
		s.exitWatcher.close()
	}
}

func (s *Service) sandboxesDir() string  { return filepath.Join(s.cfg.RootDir, "sandboxes") }
func (s *Service) containersDir() string { return filepath.Join(s.cfg.RootDir, "containers") }
func (s *Service) podsDir() string       { return filepath.Join(s.cfg.StateDir, "pods") }
func (s *Service) bundlesDir() string    { return filepath.Join(s.cfg.StateDir, "bundles") }
func (s *Service) exitsDir() string      { return filepath.Join(s.cfg.StateDir, "exits") }
func (s *Service) monitorsDir() string   { return filepath.Join(s.cfg.StateDir, "monitors") }

// usernsDir holds the root filesystems of containers in user namespaces,
// one directory per pod (userns.go).
func (s *Service) usernsDir() string { return filepath.Join(s.cfg.StateDir, "userns") }

func (s *Service) sandboxRecordPath(id string) string {
	return filepath.Join(s.sandboxesDir(), id, "sandbox.json")
}
func (s *Service) containerRecordPath(id string) string {
	return filepath.Join(s.containersDir(), id, "container.json")
}
func (s *Service) podDir(id string) string { return filepath.Join(s.podsDir(), id) }

// monitorSocket is kept short: unix socket paths are limited to 108 bytes.
func (s *Service) monitorSocket(id string) string {
	return filepath.Join(s.monitorsDir(), id[:16]+".sock")
}

// saveSandbox writes a sandbox record, flushed or not by its state
// (saveRecord).
func (s *Service) saveSandbox(rec *Sandbox) error {
	rec.Version = recordVersion
	raw, err := encodeConfig(rec.Config)
	if err != nil {
		return fmt.Errorf("sandbox %s: %w", rec.ID, err)
	}
	rec.RawConfig = raw
	path := s.sandboxRecordPath(rec.ID)
	if err := os.MkdirAll(filepath.Dir(path), store.PrivateDirMode); err != nil {
		return fmt.Errorf("sandbox %s: record dir: %w", rec.ID, err)
	}
	return saveRecord(path, rec, rec.State == SandboxCreating || rec.State == SandboxRemoving)
}

// saveContainer writes a container record, flushed or not by its state
// (saveRecord).
func (s *Service) saveContainer(rec *Container) error {
	rec.Version = recordVersion
	raw, err := encodeConfig(rec.Config)
	if err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	rec.RawConfig = raw
	path := s.containerRecordPath(rec.ID)
	if err := os.MkdirAll(filepath.Dir(path), store.PrivateDirMode); err != nil {
		return fmt.Errorf("container %s: record dir: %w", rec.ID, err)
	}
	return saveRecord(path, rec, rec.State == ContainerCreating || rec.State == ContainerRemoving)
}

// saveRecord writes a record atomically; it flushes it (file and directory)
// only when intent is set: the record is in "creating" or "removing", the
// states written before side effects that outlive a reboot (the CNI
// plugins' IP leases, a container's upper dir, image volumes, idmapped
// layers), which recovery must find to undo them. "creating" is also every
// record's first write, so each record is durable from its start.
//
// Any other state is an update (store.UpdateJSON: the new content is
// flushed once, the rename is not) that a power loss may undo, back to the
// record's previous state, with no harm: after a reboot, recovery
// (recovery.go) treats that state as it would have the lost one.
//   - sandbox: a lost "notready" leaves "ready", which loadSandboxes turns
//     into "notready" (its namespace pins are gone: sandboxLost tears the
//     network down again, CNI DEL being idempotent). A lost "ready" leaves
//     "creating": the sandbox is undone and deleted, with its containers
//     (loadContainer: sandbox gone), where it would have been kept not
//     ready; kubelet makes a new sandbox for the pod either way.
//   - container: "created", "running" and "exited" all end "exited" after
//     a reboot: reconcileContainer finds no exit file (the state directory
//     was cleared) and runc knows nothing, so a created or running record
//     becomes exited, reason Unknown, code 255; a lost "exited" loses its
//     true exit code the same way, the exit file that held it being gone
//     with the state directory.
//   - resource updates: the container is not running after a reboot.
//
// A kill -9 of the daemon loses nothing either way: the page cache
// survives it.
func saveRecord(path string, rec any, intent bool) error {
	if intent {
		return store.SaveJSON(path, rec)
	}
	return store.UpdateJSON(path, rec)
}

// updateSandbox changes a sandbox record through fn and checkpoints it; the
// change becomes visible only once it is written (saveRecord: flushed too
// in an intent state). fn reports whether it
// changed anything: an unchanged record is not rewritten (nor resurrected
// after a concurrent removal).
func (s *Service) updateSandbox(e *sandboxEntry, fn func(*Sandbox) bool) error {
	e.write.Lock()
	defer e.write.Unlock()
	next := e.snapshot()
	if !fn(&next) {
		return nil
	}
	if err := s.saveSandbox(&next); err != nil {
		return err
	}
	e.mu.Lock()
	e.rec = next
	e.mu.Unlock()
	return nil
}

// updateContainer changes a container record through fn, which reports
// whether it changed anything, and checkpoints it. As updateSandbox, the
// change is visible once it is on disk, and readers never wait for the
// disk.
func (s *Service) updateContainer(e *containerEntry, fn func(*Container) bool) error {
	e.write.Lock()
	defer e.write.Unlock()
	next := e.snapshot()
	if !fn(&next) {
		return nil
	}
	if err := s.saveContainer(&next); err != nil {
		return err
	}
	e.mu.Lock()
	e.rec = next
	e.mu.Unlock()
	return nil
}

func (e *sandboxEntry) snapshot() Sandbox {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.rec.clone()
}

func (e *containerEntry) snapshot() Container {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.rec
}

// sandboxEntry finds a sandbox by id or unique id prefix.
func (s *Service) findSandbox(idOrPrefix string) (*sandboxEntry, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("pod sandbox id: empty: %w", errdefs.ErrInvalidArgument)
	}
	id, err := s.sandboxIDs.Get(idOrPrefix)
	if err != nil {
		return nil, fmt.Errorf("pod sandbox %q: %w", idOrPrefix, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("pod sandbox %q: %w", idOrPrefix, errdefs.ErrNotFound)
	}
	return e, nil
}

// findContainer finds a container by id or unique id prefix.
func (s *Service) findContainer(idOrPrefix string) (*containerEntry, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("container id: empty: %w", errdefs.ErrInvalidArgument)
	}
	id, err := s.containerIDs.Get(idOrPrefix)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", idOrPrefix, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %q: %w", idOrPrefix, errdefs.ErrNotFound)
	}
	return e, nil
}

// containersOf lists the entries of a sandbox's containers.
func (s *Service) containersOf(sandboxID string) []*containerEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*containerEntry
	for _, e := range s.containers {
		if e.snapshot().SandboxID == sandboxID {
			out = append(out, e)
		}
	}
	return out
}

// ownOOMScoreAdj returns the lowest oom_score_adj a container may get: the
// daemon's own value when it lacks CAP_SYS_RESOURCE (the kernel refuses to
// lower it then), else -1000.
func ownOOMScoreAdj() int {
	if hasCapSysResource() {
		return -1000
	}
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return v
}

// hasCapSysResource reports whether this process holds CAP_SYS_RESOURCE (24)
// in its effective set.
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		return err == nil && caps&(1<<24) != 0
	}
	return false
}
