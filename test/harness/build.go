package harness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CNIBinDir is where Debian installs the CNI plugins.
const CNIBinDir = "/usr/lib/cni"

// SkipReason says why root tests cannot run here, or "".
func SkipReason() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "runc not in PATH"
	}
	if _, err := os.Stat(filepath.Join(CNIBinDir, "bridge")); err != nil {
		return "CNI bridge plugin missing: " + err.Error()
	}
	return ""
}

// Main is the body of a root test package's TestMain: it skips every test
// (exit 0) where SkipReason says so, runs prepare on a fresh temporary
// directory (the binaries and images the tests share), runs the tests
// unless prepare failed, removes the directory and exits. pkg names the
// package in its messages, e.g. "test/e2e".
func Main(m *testing.M, pkg string, prepare func(tmp string) error) {
	if reason := SkipReason(); reason != "" {
		fmt.Printf("%s: skipping all tests: %s\n", pkg, reason)
		os.Exit(0)
	}
	tmp, err := os.MkdirTemp("", "berth-"+filepath.Base(pkg)+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	code := 1
	if err := prepare(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "%s: setup: %v\n", pkg, err)
	} else {
		code = m.Run()
		printSummary(os.Stdout, pkg)
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// BuildBinaries builds berth, berth-monitor (make monitor-bin) and berth-pause from the module
// at moduleDir into dir; berth finds the other two beside itself. With
// BERTH_TEST_RACE=1 berth is built with the race detector, and Cleanup
// fails a test whose daemon reported a data race.
func BuildBinaries(moduleDir, dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	var race []string
	if os.Getenv("BERTH_TEST_RACE") == "1" {
		race = []string{"-race"}
	}
	builds := [][]string{
		append(append([]string{"build"}, race...), "-o", dir+"/", "./cmd/berth"),
		{"build", "-o", dir + "/", "./cmd/berth-pause"},
	}
	for _, args := range builds {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %v: %v\n%s", args, err, out)
		}
	}
	if err := BuildMonitor(moduleDir, filepath.Join(dir, "berth-monitor")); err != nil {
		return err
	}
	return CopyPinnedRunc(dir)
}

// BuildMonitor builds the per-pod monitor (C, native/berth-monitor) to
// out with make's monitor-bin target, the one way it is built; vars are
// more make variables (MONITOR_SANITIZE=1).
func BuildMonitor(moduleDir, out string, vars ...string) error {
	cmd := exec.Command("make", append([]string{"-s", "-C", moduleDir, "monitor-bin", "MONITOR_OUT=" + out}, vars...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make monitor-bin: %v\n%s", err, msg)
	}
	return nil
}

// CopyPinnedRunc copies the pinned runc that BERTH_TEST_RUNC names (make
// sets it to bin/berth-runc and builds it) into dir as berth-runc, where a
// berth in dir finds it, as make install puts it beside berth. Without
// BERTH_TEST_RUNC berth runs the system's runc (its fallback).
func CopyPinnedRunc(dir string) error {
	src := os.Getenv("BERTH_TEST_RUNC")
	if src == "" {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("BERTH_TEST_RUNC: %w (make runc-bin builds it)", err)
	}
	return os.WriteFile(filepath.Join(dir, "berth-runc"), data, 0o755)
}

// Runc is the runc the tests' berth runs, for the tests' own calls on its
// state (runc --root <state>/runc list, delete): BERTH_TEST_RUNC, else the
// system's.
func Runc() string {
	if p := os.Getenv("BERTH_TEST_RUNC"); p != "" {
		return p
	}
	return "runc"
}

// WriteOfflineConfig writes a berth config into dir under which the
// registry of ref (and moreHosts) is served by a dead loopback port: no
// test sends a DNS query or a packet off the machine, and the host's
// config is never read.
func WriteOfflineConfig(dir, ref string, moreHosts ...string) (string, error) {
	hosts := OfflineHostsDir(dir)
	registry, _, _ := strings.Cut(ref, "/")
	for _, h := range append(moreHosts, registry) {
		hostDir := filepath.Join(hosts, h)
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(hostDir, "hosts.toml"), []byte("server = \"http://127.0.0.1:9\"\n"), 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "config.toml")
	return path, os.WriteFile(path, []byte(fmt.Sprintf("[registry]\nhosts_dir = %q\n", hosts)), 0o600)
}

// OfflineHostsDir is the hosts_dir of the config WriteOfflineConfig writes
// into dir; a suite may add a registry's hosts.toml there.
func OfflineHostsDir(dir string) string { return filepath.Join(dir, "offline-hosts") }

// RandomHex returns n random hex digits.
func RandomHex(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)[:n]
}
