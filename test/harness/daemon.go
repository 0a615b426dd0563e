package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Options configure a Daemon before it first starts.
type Options struct {
	BinDir    string   // berth, berth-monitor and berth-pause (BuildBinaries)
	Config    string   // the berth config file (WriteOfflineConfig)
	Layouts   []string // OCI image layouts imported before the start
	ServeArgs []string // more flags for `berth serve`
	// PluginType replaces the type of the network's main CNI plugin
	// ("bridge"), e.g. with one that does not exist.
	PluginType string
	// StateParent holds the state directory bt-<id> (default /run), e.g.
	// where the daemon runs with a /run of its own (PrivateSystemd).
	StateParent string
	// RootParent holds the root directory bt-<id> (default /var/lib), e.g.
	// a small filesystem of the test's own (SmallFilesystem).
	RootParent string
	// Wrap runs `berth serve` through a command: Wrap..., berth, args
	// (PrivateSystemd.Enter). It must exit with berth's status and pass
	// SIGTERM on to it.
	Wrap []string
	// Env is added to the environment of `berth serve` (not of the other
	// berth commands), e.g. NOTIFY_SOCKET.
	Env []string
	// ConfigLogLevel leaves --log-level debug out of the berth commands, so
	// that the config file's log_level applies.
	ConfigLogLevel bool
}

// Daemon is one `berth serve` with its own directories and network.
type Daemon struct {
	T       *testing.T
	ID      string // 6 hex digits shared by every name below
	Root    string // --root
	State   string // --state
	Socket  string
	CNIConf string // --cni-conf-dir
	LogPath string // the daemon's stderr, kept across restarts
	Config  string // --config
	BinDir  string
	Net     Network
	// ServeArgs are passed to every start of `berth serve`.
	ServeArgs []string
	// Wrap is Options.Wrap.
	Wrap []string
	// Env and ConfigLogLevel are Options'.
	Env            []string
	ConfigLogLevel bool
	// BeforeCleanup runs first in Cleanup, with the daemon running (e.g.
	// to delete pods through the agent).
	BeforeCleanup func()
	// KnownIDs are the sandbox and container ids seen, KnownPodUIDs the pod
	// uids, for the leftover checks.
	KnownIDs     map[string]bool
	KnownPodUIDs map[string]bool

	proc Process
	conn *grpc.ClientConn
	RT   runtimeapi.RuntimeServiceClient
	Img  runtimeapi.ImageServiceClient
}

// Start starts a daemon with fresh directories, imports the layouts and
// registers the cleanup that removes every pod and asserts that nothing is
// left behind.
func Start(t *testing.T, opts Options) *Daemon {
	t.Helper()
	id := RandomHex(6)
	if opts.StateParent == "" {
		opts.StateParent = "/run"
	}
	if opts.RootParent == "" {
		opts.RootParent = "/var/lib"
	}
	d := &Daemon{
		T: t, ID: id, Wrap: opts.Wrap, Env: opts.Env, ConfigLogLevel: opts.ConfigLogLevel,
		Root:    filepath.Join(opts.RootParent, "bt-"+id),
		State:   filepath.Join(opts.StateParent, "bt-"+id),
		CNIConf: filepath.Join(t.TempDir(), "net.d"),
		LogPath: filepath.Join(t.TempDir(), "berth.log"),
		Config:  opts.Config, BinDir: opts.BinDir, ServeArgs: opts.ServeArgs,
		KnownIDs: map[string]bool{}, KnownPodUIDs: map[string]bool{},
	}
	d.Socket = filepath.Join(d.State, "berth.sock")
	KeepOnFailure(t, d.LogPath) // after d.Cleanup: the log then ends with the teardown
	d.Net = newTestNetwork(id, filepath.Join(d.Root, "cni", "networks"))
	if opts.PluginType != "" {
		d.Net.PluginType = opts.PluginType
	}
	t.Cleanup(d.Cleanup)
	if err := d.Net.WriteConfig(d.CNIConf); err != nil {
		t.Fatalf("CNI config: %v", err)
	}
	for _, layout := range opts.Layouts {
		d.MustBerth(append([]string{"image", "import"}, layout)...)
	}
	d.Start()
	return d
}

// Berth is the path of the berth binary.
func (d *Daemon) Berth() string { return filepath.Join(d.BinDir, "berth") }

// GlobalFlags point berth at this daemon's directories.
func (d *Daemon) GlobalFlags() []string {
	flags := []string{
		"--config", d.Config, "--root", d.Root, "--state", d.State,
		"--cni-conf-dir", d.CNIConf, "--cni-bin-dir", CNIBinDir,
	}
	if !d.ConfigLogLevel {
		flags = append(flags, "--log-level", "debug")
	}
	return flags
}

// BerthCmd is a berth command with this daemon's global flags (first, so
// that arguments after "--" stay the command's).
func (d *Daemon) BerthCmd(args ...string) *exec.Cmd {
	return exec.Command(d.Berth(), append(d.GlobalFlags(), args...)...)
}

// MustBerth runs a berth command and fails the test unless it exits 0; it
// returns the standard output.
func (d *Daemon) MustBerth(args ...string) string {
	d.T.Helper()
	cmd := d.BerthCmd(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		d.T.Fatalf("berth %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// Start launches `berth serve` and waits until it answers Version.
func (d *Daemon) Start() {
	d.T.Helper()
	if err := d.Launch(); err != nil {
		d.T.Fatalf("berth serve: %v\n%s", err, d.LogTail(60))
	}
}

// Launch starts `berth serve` and waits until it is ready.
func (d *Daemon) Launch() error {
	args := append(append([]string{"serve"}, d.GlobalFlags()...), d.ServeArgs...)
	argv := append(append(append([]string(nil), d.Wrap...), d.Berth()), args...)
	d.proc.Name, d.proc.LogPath, d.proc.CleanExit = "berth serve", d.LogPath, true
	d.proc.Bin, d.proc.Args, d.proc.Env = argv[0], argv[1:], d.Env
	if err := d.proc.Start(); err != nil {
		return err
	}
	return d.connect()
}

// connect dials the socket and waits for Version to succeed.
func (d *Daemon) connect() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !d.proc.Running() {
			return fmt.Errorf("exited before it was ready: %v", d.proc.ExitStatus())
		}
		if _, err := os.Stat(d.Socket); err == nil && d.conn == nil {
			conn, err := grpc.NewClient("unix://"+d.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return fmt.Errorf("dial %s: %w", d.Socket, err)
			}
			d.conn, d.RT, d.Img = conn, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
		}
		if d.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := d.RT.Version(ctx, &runtimeapi.VersionRequest{})
			cancel()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("not ready after 30s: %w", err)
			}
		} else if time.Now().After(deadline) {
			return fmt.Errorf("socket %s did not appear in 30s", d.Socket)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Running reports whether the daemon process runs.
func (d *Daemon) Running() bool { return d.proc.Running() }

func (d *Daemon) closeConn() {
	if d.conn != nil {
		d.conn.Close()
		d.conn, d.RT, d.Img = nil, nil, nil
	}
}

// Pid is the process id of the running `berth serve` (of Wrap's command
// when there is one), 0 when it is not running.
func (d *Daemon) Pid() int { return d.proc.Pid() }

// Signal sends sig to the running daemon (to Wrap's command when there is
// one).
func (d *Daemon) Signal(sig syscall.Signal) error { return d.proc.Signal(sig) }

// Kill9 kills the daemon with SIGKILL and waits for it; pods keep running.
func (d *Daemon) Kill9() {
	d.proc.Kill()
	d.closeConn()
}

// Stop sends SIGTERM and waits for the daemon to exit.
func (d *Daemon) Stop() {
	d.T.Helper()
	if !d.Running() {
		d.closeConn()
		return
	}
	if err := d.proc.Stop(20 * time.Second); err != nil {
		d.T.Errorf("%v\n%s", err, d.LogTail(30))
	}
	d.closeConn()
}

// LogTail returns the last n lines of the daemon's log.
func (d *Daemon) LogTail(n int) string { return d.proc.LogTail(n) }

// DumpStacks asks berth serve for its goroutines' stacks (SIGUSR1) and
// waits up to 10s until they are in its log: a failed test calls it
// before teardown, while whatever was stuck still is. Under a wrapper
// (Options.Wrap) the process the test started is not berth, and it does
// nothing.
func (d *Daemon) DumpStacks() {
	if !d.proc.Running() || len(d.Wrap) > 0 {
		return
	}
	var from int64
	if st, err := os.Stat(d.LogPath); err == nil {
		from = st.Size()
	}
	if err := d.proc.Signal(syscall.SIGUSR1); err != nil {
		d.T.Logf("berth serve stack dump: %v", err)
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !logHasAfter(d.LogPath, from, "=== end of goroutine stack dump ===") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	d.T.Logf("berth serve's goroutine stacks are in its log %s", d.LogPath)
}

// logHasAfter reports whether the file holds s after its first from bytes.
func logHasAfter(path string, from int64, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<40))
	return err == nil && strings.Contains(string(b), s)
}
