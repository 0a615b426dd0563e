package config

import (
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefault(t *testing.T) {
	c := Default()
	want := Config{
		RootDir:      "/var/lib/berth",
		StateDir:     "/run/berth",
		Socket:       "/run/berth/berth.sock",
		LogLevel:     "info",
		RuncPath:     "berth-runc",
		RuncRoot:     "/run/berth/runc",
		MonitorPath:  "berth-monitor",
		PausePath:    "berth-pause",
		CgroupDriver: "cgroupfs",
		CNI: CNI{
			ConfDir:        "/etc/cni/net.d",
			BinDirs:        []string{"/opt/cni/bin", "/usr/lib/cni"},
			DefaultNetwork: "berth",
			DefaultBridge:  "berth0",
			DefaultSubnet:  "10.88.0.0/16",
		},
		Registry: Registry{
			HostsDir:               "/etc/berth/certs.d",
			MaxConcurrentDownloads: 3,
			MinThroughput:          1024,
			StallWindow:            "60s",
		},
		Images: Images{
			MaxFileSize:     "16GiB",
			MaxLayerSize:    "64GiB",
			MaxImageSize:    "128GiB",
			MaxLayerEntries: 1 << 20,
			MinFreeSpace:    "1GiB",
		},
		Stream:         Stream{Address: "127.0.0.1:0"},
		CDI:            CDI{SpecDirs: []string{"/etc/cdi", "/var/run/cdi"}},
		Runtimes:       map[string]Runtime{"runc-system": {Runc: "runc"}},
		UserNamespaces: UserNamespaces{SubIDUser: "berth", SubUIDFile: "/etc/subuid", SubGIDFile: "/etc/subgid"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Default() = %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	c.CNI.BinDirs[0] = "/changed"
	if Default().CNI.BinDirs[0] != "/opt/cni/bin" {
		t.Error("Default() shares its bin_dirs slice between calls")
	}
}

func TestExampleFileListsEveryDefault(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "config.example.toml")
	raw, err := decodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(raw, Default()) {
		t.Errorf("example file decodes to %+v\nDefault() is %+v", raw, Default())
	}
	assertEveryFieldSet(t, reflect.ValueOf(raw), "Config")
}

// emptyByDefault lists the keys whose default is empty (a feature that is
// off unless configured); the example file shows them set to "".
var emptyByDefault = map[string]bool{"Config.Metrics.Address": true, "Config.Registry.AuthFile": true, "Config.Debug.PprofSocket": true}

// assertEveryFieldSet fails for a zero field, so a key added to Config but
// not to the example file is caught even before its default exists.
func assertEveryFieldSet(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	for i := range v.NumField() {
		field, fieldName := v.Field(i), name+"."+v.Type().Field(i).Name
		if field.Kind() == reflect.Struct {
			assertEveryFieldSet(t, field, fieldName)
			continue
		}
		if field.IsZero() && !emptyByDefault[fieldName] {
			t.Errorf("example file leaves %s unset", fieldName)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.toml")
	c, err := Load(path, false)
	if err != nil {
		t.Fatalf("implicit missing file: %v", err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("implicit missing file gave %+v, want defaults", c)
	}
	_, err = Load(path, true)
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), path) {
		t.Errorf("explicit missing file: err = %v, want NotFound naming the file", err)
	}
}

func TestLoadDerivedPathsFollowStateDir(t *testing.T) {
	path := writeConfig(t, `
state_dir = "/run/other"
root_dir = "/srv/berth"
log_level = "debug"
[cni]
default_subnet = "10.99.0.0/24"
`)
	c, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Socket != "/run/other/berth.sock" || c.RuncRoot != "/run/other/runc" {
		t.Errorf("socket %q, runc_root %q: want them under /run/other", c.Socket, c.RuncRoot)
	}
	if c.RootDir != "/srv/berth" || c.CNI.DefaultSubnet != "10.99.0.0/24" {
		t.Errorf("overrides lost: %+v", c)
	}
	if c.CNI.ConfDir != DefaultCNIConfDir || c.CgroupDriver != "cgroupfs" {
		t.Errorf("defaults not filled: %+v", c)
	}
	if c.SlogLevel() != slog.LevelDebug {
		t.Errorf("SlogLevel = %v, want debug", c.SlogLevel())
	}
}

func TestLoadExplicitSocketKept(t *testing.T) {
	path := writeConfig(t, "state_dir = \"/run/other\"\nsocket = \"/tmp/x.sock\"\n")
	c, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Socket != "/tmp/x.sock" {
		t.Errorf("socket = %q, want /tmp/x.sock", c.Socket)
	}
}

func TestLoadUnknownKeys(t *testing.T) {
	path := writeConfig(t, "rootdir = \"/x\"\n[cni]\nconfdir = \"/y\"\n[streams]\nport = 1\n")
	_, err := Load(path, true)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
	for _, want := range []string{path, `"rootdir"`, `"cni.confdir"`, `"streams"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "streams.port") {
		t.Errorf("error %q lists a key inside an unknown table", err)
	}
}

func TestLoadSyntaxAndTypeErrors(t *testing.T) {
	for _, content := range []string{"root_dir = ", "[cni]\nbin_dirs = \"/opt\"\n"} {
		path := writeConfig(t, content)
		_, err := Load(path, true)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), path) {
			t.Errorf("content %q: err = %v, want InvalidArgument naming the file", content, err)
		}
	}
}

func TestValidateNamesKey(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"relative root", func(c *Config) { c.RootDir = "var/lib" }, `key "root_dir": path "var/lib" is not absolute`},
		{"relative socket", func(c *Config) { c.Socket = "b.sock" }, `key "socket"`},
		{"log level", func(c *Config) { c.LogLevel = "verbose" }, `key "log_level": "verbose"`},
		{"other driver", func(c *Config) { c.CgroupDriver = "x" }, `key "cgroup_driver": unknown driver "x"`},
		{"driver case", func(c *Config) { c.CgroupDriver = "Systemd" }, `key "cgroup_driver": unknown driver "Systemd"`},
		{"bad subnet", func(c *Config) { c.CNI.DefaultSubnet = "10.88.0.0" }, `key "cni.default_subnet"`},
		{"host bits", func(c *Config) { c.CNI.DefaultSubnet = "10.88.1.2/16" }, `the network is 10.88.0.0/16`},
		{"bin dir", func(c *Config) { c.CNI.BinDirs = []string{"/ok", "rel"} }, `key "cni.bin_dirs[1]"`},
		{"relative runc", func(c *Config) { c.RuncPath = "bin/runc" }, `key "runc"`},
		{"long bridge", func(c *Config) { c.CNI.DefaultBridge = "abcdefghijklmnop" }, `key "cni.default_bridge"`},
		{"network name", func(c *Config) { c.CNI.DefaultNetwork = "-x" }, `key "cni.default_network"`},
		{"handler name", func(c *Config) { c.Runtimes["Kata_1"] = Runtime{Runc: "runc", Root: "/run/k"} }, `key "runtimes.Kata_1": handler name "Kata_1"`},
		{"handler runc", func(c *Config) { c.Runtimes["runc"] = Runtime{Runc: "runc", Root: "/run/k"} }, `key "runtimes.runc": "runc" is the default handler`},
		{"handler no runc", func(c *Config) { c.Runtimes["x"] = Runtime{Root: "/run/k"} }, `key "runtimes.x.runc": empty`},
		{"handler root", func(c *Config) { c.Runtimes["x"] = Runtime{Runc: "runc", Root: "run/k"} }, `key "runtimes.x.root"`},
		{"handler shares a root", func(c *Config) { c.Runtimes["x"] = Runtime{Runc: "runc", Root: "/run/berth/runc"} },
			`key "runtimes.x.root": "/run/berth/runc" is already runc_root's`},
	}
	for _, tc := range tests {
		c := Default()
		tc.modify(&c)
		err := c.Validate()
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want InvalidArgument containing %q", tc.name, err, tc.want)
		}
	}
}

func TestCgroupDriver(t *testing.T) {
	if c := Default(); c.CgroupDriver != CgroupDriverCgroupfs || c.SystemdCgroup() {
		t.Errorf("default driver %q (systemd %v), want cgroupfs", c.CgroupDriver, c.SystemdCgroup())
	}
	c, err := Load(writeConfig(t, "cgroup_driver = \"systemd\"\n"), true)
	if err != nil || c.CgroupDriver != CgroupDriverSystemd || !c.SystemdCgroup() {
		t.Errorf("systemd: driver %q (systemd %v), err %v", c.CgroupDriver, c.SystemdCgroup(), err)
	}
}

func TestValidateReportsEveryKey(t *testing.T) {
	c := Default()
	c.LogLevel = "loud"
	c.RootDir = "rel"
	err := c.Validate()
	for _, key := range []string{`"log_level"`, `"root_dir"`} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not mention %s", err, key)
		}
	}
}

func TestLoadValidationErrorNamesFile(t *testing.T) {
	path := writeConfig(t, "cgroup_driver = \"cgroupsv2\"\n")
	_, err := Load(path, true)
	if !errors.Is(err, errdefs.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "cgroup_driver") {
		t.Errorf("err = %v, want InvalidArgument naming file and key", err)
	}
}

func TestParseLogLevel(t *testing.T) {
	for s, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "": slog.LevelInfo,
		"warn": slog.LevelWarn, "error": slog.LevelError,
	} {
		if got, err := ParseLogLevel(s); err != nil || got != want {
			t.Errorf("ParseLogLevel(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseLogLevel("INFO"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("ParseLogLevel(INFO): err = %v, want InvalidArgument", err)
	}
}

func TestRegistryValidation(t *testing.T) {
	cases := map[string]string{
		"relative hosts dir": "[registry]\nhosts_dir = \"certs.d\"\n",
		"zero downloads":     "[registry]\nmax_concurrent_downloads = -1\n",
		"huge downloads":     "[registry]\nmax_concurrent_downloads = 1000\n",
		"negative rate":      "[registry]\nmin_throughput = -5\n",
		"bad window":         "[registry]\nstall_window = \"soon\"\n",
		"tiny window":        "[registry]\nstall_window = \"10ms\"\n",
		"relative auth file": "[registry]\nauth_file = \"auth.json\"\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, content), true)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "registry.") {
				t.Errorf("err = %v, want InvalidArgument naming the registry key", err)
			}
		})
	}
	c, err := Load(writeConfig(t, "[registry]\nstall_window = \"2m\"\nmin_throughput = 10\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Registry.StallWindowDuration() != 2*time.Minute || c.Registry.MinThroughput != 10 || c.Registry.MaxConcurrentDownloads != 3 {
		t.Errorf("registry = %+v", c.Registry)
	}
}

func TestStreamAddressValidation(t *testing.T) {
	for name, addr := range map[string]string{
		"no port":   "127.0.0.1",
		"host name": "localhost:1234",
		"bad port":  "127.0.0.1:70000",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, "[stream]\naddress = \""+addr+"\"\n"), true)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "stream.address") {
				t.Errorf("err = %v, want InvalidArgument naming stream.address", err)
			}
		})
	}
	c, err := Load(writeConfig(t, "[stream]\naddress = \"127.0.0.1:10010\"\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stream.Address != "127.0.0.1:10010" {
		t.Errorf("stream address = %q", c.Stream.Address)
	}
}

func TestMetricsAddressValidation(t *testing.T) {
	for _, addr := range []string{"9100", "127.0.0.1", "127.0.0.1:http-alt", "[::1]:70000", "a b:9100"} {
		t.Run(addr, func(t *testing.T) {
			_, err := Load(writeConfig(t, "[metrics]\naddress = \""+addr+"\"\n"), true)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "metrics.address") {
				t.Errorf("err = %v, want InvalidArgument naming metrics.address", err)
			}
		})
	}
	for _, addr := range []string{"127.0.0.1:9100", "[::1]:9100", "localhost:9100", ":9100"} {
		c, err := Load(writeConfig(t, "[metrics]\naddress = \""+addr+"\"\n"), true)
		if err != nil {
			t.Errorf("address %q: %v", addr, err)
			continue
		}
		if c.Metrics.Address != addr {
			t.Errorf("metrics address = %q, want %q", c.Metrics.Address, addr)
		}
	}
	if Default().Metrics.Address != "" {
		t.Errorf("metrics are on by default: %q", Default().Metrics.Address)
	}
}

func TestPprofSocketValidation(t *testing.T) {
	for _, path := range []string{"pprof.sock", "/" + strings.Repeat("x", 120)} {
		_, err := Load(writeConfig(t, "[debug]\npprof_socket = \""+path+"\"\n"), true)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "debug.pprof_socket") {
			t.Errorf("%q: err = %v, want InvalidArgument naming debug.pprof_socket", path, err)
		}
	}
	c, err := Load(writeConfig(t, "[debug]\npprof_socket = \"/run/b/pprof.sock\"\n"), true)
	if err != nil || c.Debug.PprofSocket != "/run/b/pprof.sock" {
		t.Errorf("a good socket path: %q, %v", c.Debug.PprofSocket, err)
	}
}

func TestRuntimesDefaultAndEmpty(t *testing.T) {
	c, err := Load(writeConfig(t, "state_dir = \"/run/b\"\n[runtimes.kata]\nrunc = \"/opt/kata/runc\"\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]Runtime{"kata": {Runc: "/opt/kata/runc"}}; !maps.Equal(c.Runtimes, want) {
		t.Errorf("runtimes %v, want %v (a table of one's own replaces the default runc-system)", c.Runtimes, want)
	}
	if got := c.RuntimeRoot("kata"); got != "/run/b/runtimes/kata" {
		t.Errorf("kata's root %q, want it under the state dir", got)
	}
	c.StateDir = "/run/other" // as --state sets it after the file is read
	if got := c.RuntimeRoot("kata"); got != "/run/other/runtimes/kata" {
		t.Errorf("kata's root %q after the state dir moved, want /run/other/runtimes/kata", got)
	}
	c, err = Load(writeConfig(t, "runtimes = {}\n"), true)
	if err != nil || len(c.Runtimes) != 0 {
		t.Errorf("runtimes = {}: %v, %v; want none", c.Runtimes, err)
	}
}
