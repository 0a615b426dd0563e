package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/berth-dev/berth/internal/errdefs"
)

// DefaultPath is where berth looks for its configuration file when none is
// given on the command line.
const DefaultPath = "/etc/berth/config.toml"

// Defaults of the keys that do not derive from another key.
const (
	DefaultRootDir  = "/var/lib/berth"
	DefaultStateDir = "/run/berth"
	DefaultLogLevel = "info"
	// DefaultRunc is the pinned runc that make install puts beside berth
	// (tools/runc); SystemRunc, the distribution's, is what berth runs
	// where that is not installed.
	DefaultRunc          = "berth-runc"
	SystemRunc           = "runc"
	DefaultMonitor       = "berth-monitor"
	DefaultPause         = "berth-pause"
	CgroupDriverCgroupfs = "cgroupfs"
	CgroupDriverSystemd  = "systemd"
	DefaultCNIConfDir    = "/etc/cni/net.d"
	DefaultNetwork       = "berth"
	DefaultBridge        = "berth0"
	DefaultSubnet        = "10.88.0.0/16"

	DefaultHostsDir               = "/etc/berth/certs.d"
	DefaultMaxConcurrentDownloads = 3
	DefaultMinThroughput          = 1024
	DefaultStallWindow            = "60s"

	DefaultStreamAddress = "127.0.0.1:0"
)

// DefaultCNIBinDirs are the directories searched for CNI plugins by default.
func DefaultCNIBinDirs() []string { return []string{"/opt/cni/bin", "/usr/lib/cni"} }

// Config is berth's configuration. The zero value of each field means
// "default"; see ApplyDefaults.
type Config struct {
	RootDir      string   `toml:"root_dir"`      // durable state; default /var/lib/berth
	StateDir     string   `toml:"state_dir"`     // volatile state; default /run/berth
	Socket       string   `toml:"socket"`        // CRI socket; default <state_dir>/berth.sock
	LogLevel     string   `toml:"log_level"`     // debug|info|warn|error; default info
	RuncPath     string   `toml:"runc"`          // default berth-runc: beside the berth executable, else PATH, else the system's runc
	RuncRoot     string   `toml:"runc_root"`     // runc --root; default <state_dir>/runc
	MonitorPath  string   `toml:"monitor"`       // default berth-monitor: beside the berth executable, else PATH
	PausePath    string   `toml:"pause"`         // default berth-pause: beside the berth executable, else PATH
	CgroupDriver string   `toml:"cgroup_driver"` // cgroupfs|systemd; default cgroupfs, whatever PID 1 is
	CNI          CNI      `toml:"cni"`
	Registry     Registry `toml:"registry"`
	Images       Images   `toml:"images"`
	Stream       Stream   `toml:"stream"`
	Metrics      Metrics  `toml:"metrics"`
	CDI          CDI      `toml:"cdi"`
	Debug        Debug    `toml:"debug"`
	// Runtimes are the runtime handlers beside the default one ("runc":
	// the runc and runc_root keys), by name. Default: runc-system, the
	// system's runc from PATH; an empty table (runtimes = {}) has none.
	Runtimes map[string]Runtime `toml:"runtimes"`
	// UserNamespaces configures pods in user namespaces (CRI UserNamespace
	// mode POD, Kubernetes hostUsers: false).
	UserNamespaces UserNamespaces `toml:"user_namespaces"`
}

// UserNamespaces says where pods' user namespace mappings may lie: the
// subordinate ids of SubIDUser in SubUIDFile and SubGIDFile when either
// names it, else anywhere but the host's root.
type UserNamespaces struct {
	SubIDUser  string `toml:"subid_user"`  // default berth
	SubUIDFile string `toml:"subuid_file"` // default /etc/subuid
	SubGIDFile string `toml:"subgid_file"` // default /etc/subgid
}

// Runtime is a runtime handler of [runtimes.<name>]: another runc.
type Runtime struct {
	Runc string `toml:"runc"` // absolute path, or a name looked for beside berth, then in PATH
	Root string `toml:"root"` // runc --root; default <state_dir>/runtimes/<name> (RuntimeRoot)
}

// SystemRuncHandler is the default extra handler: the system's runc.
const SystemRuncHandler = "runc-system"

// CDI configures the Container Device Interface registry.
type CDI struct {
	// SpecDirs are read in increasing priority; default /etc/cdi,
	// /var/run/cdi (the CDI library's and containerd's).
	SpecDirs []string `toml:"spec_dirs"`
}

// Debug configures what helps to find out where berth spends its time.
type Debug struct {
	// PprofSocket, when set, serves Go's runtime profiles (CPU, heap,
	// goroutines, mutex and block, the last two sampled only then) on this
	// unix socket, root-only: `curl --unix-socket PATH
	// http://berth/debug/pprof/mutex`. Default "" (off).
	PprofSocket string `toml:"pprof_socket"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Address string `toml:"address"` // host:port serving /metrics; default "" (off)
}

// Stream configures the streaming server of exec, attach and port-forward.
type Stream struct {
	Address string `toml:"address"` // ip:port; port 0 picks a free one; default 127.0.0.1:0
}

// Registry configures image pulls.
type Registry struct {
	HostsDir               string `toml:"hosts_dir"`                // <hosts_dir>/<host>/hosts.toml; default /etc/berth/certs.d
	MaxConcurrentDownloads int    `toml:"max_concurrent_downloads"` // layer downloads at a time; default 3
	MinThroughput          int64  `toml:"min_throughput"`           // bytes/s a download must reach over stall_window; default 1024
	StallWindow            string `toml:"stall_window"`             // Go duration; default 60s
	// AuthFile is a docker config.json whose credentials PullImage uses
	// when the request carries none (CRI-O's global_auth_file); default
	// none. It must be owned by root and not writable by others.
	AuthFile string `toml:"auth_file"`
}

// SystemdCgroup reports whether containers' cgroups go through systemd
// (cgroup_driver = "systemd").
func (c Config) SystemdCgroup() bool { return c.CgroupDriver == CgroupDriverSystemd }

// StallWindowDuration returns stall_window parsed (Validate checks it).
func (r Registry) StallWindowDuration() time.Duration {
	d, _ := time.ParseDuration(r.StallWindow)
	return d
}

// CNI configures pod networking.
type CNI struct {
	ConfDir        string   `toml:"conf_dir"`        // network configurations; default /etc/cni/net.d
	BinDirs        []string `toml:"bin_dirs"`        // plugin directories; default /opt/cni/bin, /usr/lib/cni
	DefaultNetwork string   `toml:"default_network"` // name of berth's default bridge network; default berth
	DefaultBridge  string   `toml:"default_bridge"`  // bridge of that network; default berth0
	DefaultSubnet  string   `toml:"default_subnet"`  // subnet of that network; default 10.88.0.0/16
}

// Default returns the configuration with every field set to its default.
func Default() Config {
	var c Config
	c.ApplyDefaults()
	return c
}

// ApplyDefaults fills every zero field with its default. Paths under the
// state directory are derived from c.StateDir as configured.
func (c *Config) ApplyDefaults() {
	setDefault(&c.RootDir, DefaultRootDir)
	setDefault(&c.StateDir, DefaultStateDir)
	setDefault(&c.Socket, filepath.Join(c.StateDir, "berth.sock"))
	setDefault(&c.LogLevel, DefaultLogLevel)
	setDefault(&c.RuncPath, DefaultRunc)
	setDefault(&c.RuncRoot, filepath.Join(c.StateDir, "runc"))
	setDefault(&c.MonitorPath, DefaultMonitor)
	setDefault(&c.PausePath, DefaultPause)
	setDefault(&c.CgroupDriver, CgroupDriverCgroupfs)
	setDefault(&c.CNI.ConfDir, DefaultCNIConfDir)
	if len(c.CNI.BinDirs) == 0 {
		c.CNI.BinDirs = DefaultCNIBinDirs()
	}
	setDefault(&c.CNI.DefaultNetwork, DefaultNetwork)
	setDefault(&c.CNI.DefaultBridge, DefaultBridge)
	setDefault(&c.CNI.DefaultSubnet, DefaultSubnet)
	setDefault(&c.Registry.HostsDir, DefaultHostsDir)
	if c.Registry.MaxConcurrentDownloads == 0 {
		c.Registry.MaxConcurrentDownloads = DefaultMaxConcurrentDownloads
	}
	if c.Registry.MinThroughput == 0 {
		c.Registry.MinThroughput = DefaultMinThroughput
	}
	setDefault(&c.Registry.StallWindow, DefaultStallWindow)
	c.Images.applyDefaults()
	setDefault(&c.Stream.Address, DefaultStreamAddress)
	if len(c.CDI.SpecDirs) == 0 {
		c.CDI.SpecDirs = []string{"/etc/cdi", "/var/run/cdi"}
	}
	if c.Runtimes == nil {
		c.Runtimes = map[string]Runtime{SystemRuncHandler: {Runc: SystemRunc}}
	}
	setDefault(&c.UserNamespaces.SubIDUser, "berth")
	setDefault(&c.UserNamespaces.SubUIDFile, "/etc/subuid")
	setDefault(&c.UserNamespaces.SubGIDFile, "/etc/subgid")
}

// RuntimeRoot is the --root of runtime handler name: its root key, else
// <state_dir>/runtimes/<name>, derived when asked, so that a state
// directory given on the command line moves it too.
func (c Config) RuntimeRoot(name string) string {
	if r := c.Runtimes[name].Root; r != "" {
		return r
	}
	return filepath.Join(c.StateDir, "runtimes", name)
}

func setDefault(field *string, value string) {
	if *field == "" {
		*field = value
	}
}

// Load reads the configuration file at path, fills defaults and validates
// the result. A missing file yields Default() unless explicit is true (the
// user named the file), in which case it is an error wrapping
// errdefs.ErrNotFound. Unknown keys are an error naming each key.
func Load(path string, explicit bool) (Config, error) {
	c, err := decodeFile(path)
	if errors.Is(err, errdefs.ErrNotFound) && !explicit {
		return Default(), nil
	}
	if err != nil {
		return Config{}, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// decodeFile parses path without filling defaults.
func decodeFile(path string) (Config, error) {
	var c Config
	md, err := toml.DecodeFile(path, &c)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("config file %s: %w", path, errdefs.ErrNotFound)
	}
	if err != nil {
		return Config{}, fmt.Errorf("config file %s: %w: %w", path, err, errdefs.ErrInvalidArgument)
	}
	if keys := unknownKeys(md); len(keys) > 0 {
		return Config{}, fmt.Errorf("config file %s: unknown keys %s: %w",
			path, strings.Join(keys, ", "), errdefs.ErrInvalidArgument)
	}
	return c, nil
}

// unknownKeys lists the undecoded keys, quoted and sorted, leaving out the
// keys inside an unknown table (the table itself is reported).
func unknownKeys(md toml.MetaData) []string {
	var names []string
	for _, k := range md.Undecoded() {
		names = append(names, k.String())
	}
	slices.Sort(names)
	var keys []string
	parent := ""
	for _, name := range names {
		if parent != "" && strings.HasPrefix(name, parent+".") {
			continue
		}
		parent = name
		keys = append(keys, fmt.Sprintf("%q", name))
	}
	return keys
}

// SlogLevel returns the configured log level; an unknown level (which
// Validate rejects) reads as info.
func (c Config) SlogLevel() slog.Level {
	level, err := ParseLogLevel(c.LogLevel)
	if err != nil {
		return slog.LevelInfo
	}
	return level
}

// ParseLogLevel maps debug, info, warn and error (and "" as info) to their
// slog levels.
func ParseLogLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error: %w", s, errdefs.ErrInvalidArgument)
}
