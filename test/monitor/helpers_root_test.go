package monitor_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/runc"
	"github.com/berth-dev/berth/test/harness"
)

const runcBinary = "/usr/sbin/runc"

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// sanitizeEnv runs the suite on the monitor's AddressSanitizer and UBSan
// build (make test does, after the normal run): every monitor then reports
// a memory or undefined-behaviour error into sanitizerDir, and any report
// fails the run.
const sanitizeEnv = "BERTH_TEST_MONITOR_SANITIZE"

var sanitizerDir string

func TestMain(m *testing.M) {
	if os.Getenv(launcherEnv) != "" {
		runLauncher()
		return
	}
	if os.Getenv(sanitizeEnv) == "1" {
		var err error
		if sanitizerDir, err = os.MkdirTemp("", "berth-monitor-sanitizer-"); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		// The monitor inherits the environment through monitor.Launch.
		os.Setenv("ASAN_OPTIONS", "detect_leaks=0:log_path="+filepath.Join(sanitizerDir, "asan"))
		os.Setenv("UBSAN_OPTIONS", "print_stacktrace=1:log_path="+filepath.Join(sanitizerDir, "ubsan"))
	}
	code := m.Run()
	if sanitizerDir != "" {
		if reports, _ := filepath.Glob(filepath.Join(sanitizerDir, "*")); len(reports) > 0 {
			for _, r := range reports {
				data, _ := os.ReadFile(r)
				fmt.Printf("sanitizer report %s:\n%s\n", r, data)
			}
			code = 1
		}
		os.RemoveAll(sanitizerDir)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(runcBinary); err != nil {
		t.Skipf("runc: %v", err)
	}
}

// binaries builds berth-monitor and berth-pause once per test run.
func binaries(t *testing.T) (monitorBin, pauseBin string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "berth-bin-")
		if buildErr != nil {
			return
		}
		var vars []string
		if os.Getenv(sanitizeEnv) == "1" {
			vars = append(vars, "MONITOR_SANITIZE=1")
		}
		if buildErr = harness.BuildMonitor("../..", filepath.Join(binDir, "berth-monitor"), vars...); buildErr != nil {
			return
		}
		for _, name := range []string{"berth-pause"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), "../../cmd/"+name)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v: %s", name, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "berth-monitor"), filepath.Join(binDir, "berth-pause")
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// env is one launched monitor with its own runc root and directories.
type env struct {
	dir     string
	socket  string
	exitDir string
	logFile string
	pid     int
	client  *monitor.Client
	runc    *runc.Runc
	prefix  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	requireRoot(t)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "bmon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	e := &env{
		dir:     dir,
		socket:  filepath.Join(sockDir, "m.sock"),
		exitDir: filepath.Join(dir, "exits"),
		logFile: filepath.Join(dir, "monitor.log"),
		runc:    &runc.Runc{Path: runcBinary, Root: filepath.Join(dir, "runc")},
		prefix:  "bt-" + randomSuffix(),
	}
	e.client = monitor.NewClient(e.socket)
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(e.logFile)
			t.Logf("monitor log:\n%s", data)
		}
	})
	return e
}

func (e *env) launchOptions(t *testing.T) monitor.LaunchOptions {
	monitorBin, _ := binaries(t)
	return monitor.LaunchOptions{Binary: monitorBin, PodID: e.prefix, Socket: e.socket, ExitDir: e.exitDir,
		RuncPath: runcBinary, RuncRoot: e.runc.Root, LogFile: e.logFile}
}

// launch starts the monitor as the test's child and kills it in cleanup.
func (e *env) launch(t *testing.T) {
	t.Helper()
	pid, err := monitor.Launch(e.launchOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	e.adopt(t, pid)
}

func (e *env) adopt(t *testing.T, pid int) {
	e.pid = pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // it may have exited
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

type bundleOpts struct {
	args             []string
	terminal         bool
	memLimit         int64
	stdin, stdinOnce bool
}

// bundle writes an OCI bundle whose rootfs holds only busybox.
func (e *env) bundle(t *testing.T, id string, o bundleOpts) (dir, cgroup string) {
	t.Helper()
	dir = filepath.Join(e.dir, "bundles", id)
	bin := filepath.Join(dir, "rootfs", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skipf("busybox: %v", err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("busybox", filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(runcBinary, "spec", "--bundle", dir).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v: %s", err, out)
	}
	cgroup = "/" + e.prefix + "-" + id
	editSpec(t, filepath.Join(dir, "config.json"), o, cgroup)
	return dir, cgroup
}

func editSpec(t *testing.T, path string, o bundleOpts, cgroup string) {
	t.Helper()
	var spec map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	process := spec["process"].(map[string]any)
	process["terminal"] = o.terminal
	process["args"] = o.args
	spec["root"].(map[string]any)["readonly"] = false
	linux := spec["linux"].(map[string]any)
	linux["cgroupsPath"] = cgroup
	var namespaces []any
	for _, ns := range linux["namespaces"].([]any) {
		if ns.(map[string]any)["type"] != "network" {
			namespaces = append(namespaces, ns)
		}
	}
	linux["namespaces"] = namespaces
	if o.memLimit > 0 {
		linux["resources"] = map[string]any{"memory": map[string]any{"limit": o.memLimit}}
	}
	data, _ = json.Marshal(spec)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// create makes the container through the monitor; cleanup force-deletes it.
func (e *env) create(t *testing.T, id string, o bundleOpts) (logPath string, pid int) {
	t.Helper()
	logPath, pid, _ = e.make(t, id, o, false)
	return logPath, pid
}

// run creates and starts the container in one call (runc run --detach);
// started is what the monitor answered.
func (e *env) run(t *testing.T, id string, o bundleOpts) (logPath string, pid int, started bool) {
	t.Helper()
	return e.make(t, id, o, true)
}

func (e *env) make(t *testing.T, id string, o bundleOpts, run bool) (logPath string, pid int, started bool) {
	t.Helper()
	bundle, cgroup := e.bundle(t, id, o)
	logPath = filepath.Join(e.dir, "logs", id, "0.log")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.runc.Delete(ctx, id, true); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := monitor.CreateRequest{ID: id, Bundle: bundle, LogPath: logPath,
		LogDirectory: filepath.Join(e.dir, "logs"), LogRelPath: id + "/0.log",
		Terminal: o.terminal, CgroupPath: cgroup, Stdin: o.stdin, StdinOnce: o.stdinOnce}
	var err error
	if run {
		pid, started, err = e.client.Run(ctx, req)
	} else {
		pid, err = e.client.Create(ctx, req)
	}
	if err != nil {
		t.Fatal(err)
	}
	return logPath, pid, started
}

func (e *env) start(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.client.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// waitExitFile polls the exit dir, as the daemon would after a restart.
func (e *env) waitExitFile(t *testing.T, id string, timeout time.Duration) *monitor.ExitRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rec, err := monitor.ReadExitFile(e.exitDir, id)
		if err == nil {
			return rec
		}
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s: no exit file after %s", id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(t *testing.T, path string) []crilog.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := crilog.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// launcherEnv makes the test binary act as a short-lived daemon that
// launches a monitor, prints its pid and waits to be killed.
const launcherEnv = "BERTH_TEST_LAUNCHER"

func runLauncher() {
	var o monitor.LaunchOptions
	if err := json.Unmarshal([]byte(os.Getenv(launcherEnv)), &o); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	pid, err := monitor.Launch(o)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(strconv.Itoa(pid))
	select {}
}
