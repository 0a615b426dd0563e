package config

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxInterfaceName is the longest Linux network interface name (IFNAMSIZ-1).
const maxInterfaceName = 15

var networkName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// Validate checks a configuration whose defaults are filled. It reports every
// invalid key at once; each error names the key and wraps
// errdefs.ErrInvalidArgument.
func (c Config) Validate() error {
	errs := []error{
		absolutePath("root_dir", c.RootDir),
		absolutePath("state_dir", c.StateDir),
		absolutePath("socket", c.Socket),
		absolutePath("runc_root", c.RuncRoot),
		absolutePath("cni.conf_dir", c.CNI.ConfDir),
		binary("runc", c.RuncPath),
		binary("monitor", c.MonitorPath),
		binary("pause", c.PausePath),
		logLevel(c.LogLevel),
		cgroupDriver(c.CgroupDriver),
		binDirs(c.CNI.BinDirs),
		specDirs(c.CDI.SpecDirs),
		runtimes(c),
		network(c.CNI.DefaultNetwork),
		bridge(c.CNI.DefaultBridge),
		subnet(c.CNI.DefaultSubnet),
		absolutePath("registry.hosts_dir", c.Registry.HostsDir),
		registry(c.Registry),
		images(c.Images),
		streamAddress(c.Stream.Address),
		metricsAddress(c.Metrics.Address),
		pprofSocket(c.Debug.PprofSocket),
	}
	return joinErrors(errs)
}

// joinErrors joins the non-nil errors on one line ("a; b"), keeping each
// one reachable with errors.Is.
func joinErrors(errs []error) error {
	var found []any
	for _, err := range errs {
		if err != nil {
			found = append(found, err)
		}
	}
	if len(found) == 0 {
		return nil
	}
	format := strings.TrimSuffix(strings.Repeat("%w; ", len(found)), "; ")
	return fmt.Errorf(format, found...)
}

func invalid(key, format string, args ...any) error {
	return fmt.Errorf("key %q: %s: %w", key, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}

func absolutePath(key, path string) error {
	if !filepath.IsAbs(path) {
		return invalid(key, "path %q is not absolute", path)
	}
	return nil
}

// binary accepts an absolute path or a bare name resolved at use.
func binary(key, value string) error {
	if value == "" || (strings.ContainsRune(value, '/') && !filepath.IsAbs(value)) {
		return invalid(key, "%q is neither an absolute path nor a bare program name", value)
	}
	return nil
}

func logLevel(level string) error {
	if _, err := ParseLogLevel(level); err != nil {
		return invalid("log_level", "%q is not one of debug, info, warn, error", level)
	}
	return nil
}

func cgroupDriver(driver string) error {
	switch driver {
	case CgroupDriverCgroupfs, CgroupDriverSystemd:
		return nil
	}
	return invalid("cgroup_driver", "unknown driver %q; want \"cgroupfs\" or \"systemd\"", driver)
}

func binDirs(dirs []string) error {
	for i, dir := range dirs {
		if !filepath.IsAbs(dir) {
			return invalid(fmt.Sprintf("cni.bin_dirs[%d]", i), "path %q is not absolute", dir)
		}
	}
	return nil
}

// runtimes checks [runtimes.<name>]: a DNS label that is not "runc" (the
// default handler's), a runc, and a root of its own.
func runtimes(c Config) error {
	roots := map[string]string{c.RuncRoot: "runc_root"}
	names := make([]string, 0, len(c.Runtimes))
	for name := range c.Runtimes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r, key := c.Runtimes[name], "runtimes."+name
		root := c.RuntimeRoot(name)
		switch {
		case !handlerName.MatchString(name) || len(name) > 63:
			return invalid(key, "handler name %q: want a DNS label (lower-case letters, digits, '-')", name)
		case name == "runc":
			return invalid(key, "\"runc\" is the default handler: set the runc and runc_root keys")
		case r.Runc == "":
			return invalid(key+".runc", "empty")
		case !filepath.IsAbs(root) || filepath.Clean(root) != root:
			return invalid(key+".root", "path %q is not absolute and clean", root)
		case roots[root] != "":
			return invalid(key+".root", "%q is already %s's", root, roots[root])
		}
		if err := binary(key+".runc", r.Runc); err != nil {
			return err
		}
		roots[root] = key
	}
	return nil
}

// handlerName is a runtime handler's name: a DNS-1123 label, as a
// RuntimeClass's handler is.
var handlerName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func specDirs(dirs []string) error {
	for i, dir := range dirs {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
			return invalid(fmt.Sprintf("cdi.spec_dirs[%d]", i), "path %q is not absolute and clean", dir)
		}
	}
	return nil
}

func network(name string) error {
	if !networkName.MatchString(name) {
		return invalid("cni.default_network", "name %q: want letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

func bridge(name string) error {
	if name == "" || len(name) > maxInterfaceName || strings.ContainsAny(name, "/: \t\n") {
		return invalid("cni.default_bridge", "interface name %q: want 1 to %d characters without '/', ':' or spaces", name, maxInterfaceName)
	}
	return nil
}

func subnet(s string) error {
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return invalid("cni.default_subnet", "%q is not a CIDR subnet", s)
	}
	if prefix != prefix.Masked() {
		return invalid("cni.default_subnet", "%q has host bits set; the network is %s", s, prefix.Masked())
	}
	return nil
}

func registry(r Registry) error {
	if r.MaxConcurrentDownloads < 1 || r.MaxConcurrentDownloads > 64 {
		return invalid("registry.max_concurrent_downloads", "%d: want 1 to 64", r.MaxConcurrentDownloads)
	}
	if r.MinThroughput < 1 {
		return invalid("registry.min_throughput", "%d bytes/s: want at least 1", r.MinThroughput)
	}
	d, err := time.ParseDuration(r.StallWindow)
	if err != nil || d < time.Second {
		return invalid("registry.stall_window", "%q: want a duration of at least 1s, like \"60s\" or \"2m\"", r.StallWindow)
	}
	if r.AuthFile != "" && !filepath.IsAbs(r.AuthFile) {
		return invalid("registry.auth_file", "%q: want an absolute path", r.AuthFile)
	}
	return nil
}

// streamAddress must be an IP literal and a port: the streaming server
// listens on it and builds its URLs from it.
func streamAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalid("stream.address", "%q: %v", addr, err)
	}
	if net.ParseIP(host) == nil {
		return invalid("stream.address", "%q: host must be an IP address", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return invalid("stream.address", "%q: port must be 0-65535", addr)
	}
	return nil
}

// maxSocketPath is the longest unix socket path (sun_path, less its NUL).
const maxSocketPath = 107

// pprofSocket is empty (off) or an absolute path short enough for a unix
// socket.
func pprofSocket(path string) error {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) || len(path) > maxSocketPath {
		return invalid("debug.pprof_socket", "%q: want an absolute path of at most %d bytes", path, maxSocketPath)
	}
	return nil
}

// metricsAddress is empty (no metrics endpoint) or host:port, where host is
// an IP address, a name, or empty for every address.
func metricsAddress(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalid("metrics.address", "%q: want host:port: %v", addr, err)
	}
	if strings.ContainsAny(host, "/ \t") {
		return invalid("metrics.address", "%q: host must be an IP address or a host name", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return invalid("metrics.address", "%q: port must be 0-65535", addr)
	}
	return nil
}
