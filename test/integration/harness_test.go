package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/testimage"
)

// cniBinDir is where Debian installs the CNI plugins.
const cniBinDir = "/usr/lib/cni"

// Built once by TestMain.
var (
	binDir      string // berth, berth-monitor, berth-pause
	layoutDir   string // OCI layout of the busybox test image
	stopLayout  string // OCI layout of the same image tagged stopImage, StopSignal SIGUSR1
	busyboxRef  string // fully qualified name of the test image
	stopImage   string // fully qualified name of the second test image
	emptyConfig string // the offline berth config (writeOfflineConfig): the host's is never read
)

func TestMain(m *testing.M) {
	if reason := skipReason(); reason != "" {
		fmt.Println("test/integration: skipping all tests:", reason)
		os.Exit(0)
	}
	tmp, err := os.MkdirTemp("", "berth-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	code := 1
	if err := prepare(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "test/integration: setup:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func skipReason() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "runc not in PATH"
	}
	if _, err := os.Stat(filepath.Join(cniBinDir, "bridge")); err != nil {
		return "CNI bridge plugin missing: " + err.Error()
	}
	return ""
}

// writeOfflineConfig writes the berth config every daemon gets unless a test
// writes its own: the host's config is never read, and the registries the
// tests name are served by a dead loopback port, so that no test sends a
// DNS query or a packet off the machine.
func writeOfflineConfig(tmp, ref string, moreHosts ...string) (string, error) {
	hosts := filepath.Join(tmp, "offline-hosts")
	registry, _, _ := strings.Cut(ref, "/")
	for _, h := range append(moreHosts, registry) {
		dir := filepath.Join(hosts, h)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte("server = \"http://127.0.0.1:9\"\n"), 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(tmp, "config.toml")
	return path, os.WriteFile(path, []byte(fmt.Sprintf("[registry]\nhosts_dir = %q\n", hosts)), 0o600)
}

// prepare builds the binaries and the test images into tmp.
func prepare(tmp string) error {
	binDir = filepath.Join(tmp, "bin")
	if err := buildBinaries(binDir); err != nil {
		return err
	}
	var err error
	if busyboxRef, err = image.NormalizeRef("busybox:latest"); err != nil {
		return err
	}
	if emptyConfig, err = writeOfflineConfig(tmp, busyboxRef, "berth.test"); err != nil {
		return err
	}
	stopImage = "berth.test/busybox:stop"
	layoutDir = filepath.Join(tmp, "layout")
	if err := testimage.WriteLayout(layoutDir, testimage.Options{Name: busyboxRef}); err != nil {
		return fmt.Errorf("test image: %w", err)
	}
	stopLayout = filepath.Join(tmp, "layout-stop")
	if err := testimage.WriteLayout(stopLayout, testimage.Options{Name: stopImage, StopSignal: "SIGUSR1"}); err != nil {
		return fmt.Errorf("test image %s: %w", stopImage, err)
	}
	return nil
}

// buildBinaries builds the three commands into dir; berth finds the monitor
// and pause binaries beside its own executable.
func buildBinaries(dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	// BERTH_TEST_RACE=1 builds the daemon with the race detector; cleanup
	// then fails a test whose daemon reported a data race.
	var race []string
	if os.Getenv("BERTH_TEST_RACE") == "1" {
		race = []string{"-race"}
	}
	builds := [][]string{
		append(append([]string{"build"}, race...), "-o", dir+"/", "./cmd/berth"),
		{"build", "-o", dir + "/", "./cmd/berth-monitor", "./cmd/berth-pause"},
	}
	for _, args := range builds {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %v: %v\n%s", args, err, out)
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)[:n]
}

// daemon is one `berth serve` with its own directories and network.
type daemon struct {
	t        *testing.T
	id       string // 6 hex digits shared by every name below
	root     string // --root
	state    string // --state
	socket   string
	cniConf  string // --cni-conf-dir
	logPath  string // the daemon's stderr, kept across restarts
	config   string // --config: emptyConfig unless an option writes one
	net      testNetwork
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	img      runtimeapi.ImageServiceClient
	knownIDs map[string]bool // sandbox and container ids seen, for the leftover checks
}

// daemonOption changes a daemon before it first starts.
type daemonOption func(*daemon)

// withPluginType replaces the bridge plugin's type, e.g. with one that does
// not exist.
func withPluginType(typ string) daemonOption {
	return func(d *daemon) { d.net.pluginType = typ }
}

// startDaemon starts a daemon with fresh directories, imports the test image
// and registers the cleanup that removes every pod and asserts that nothing
// is left behind.
func startDaemon(t *testing.T, opts ...daemonOption) *daemon {
	t.Helper()
	id := randomHex(6)
	d := &daemon{
		t:        t,
		id:       id,
		root:     "/var/lib/bt-" + id,
		state:    "/run/bt-" + id,
		cniConf:  filepath.Join(t.TempDir(), "net.d"),
		logPath:  filepath.Join(t.TempDir(), "berth.log"),
		config:   emptyConfig,
		knownIDs: map[string]bool{},
	}
	d.socket = filepath.Join(d.state, "berth.sock")
	d.net = newTestNetwork(id, filepath.Join(d.root, "cni", "networks"))
	for _, o := range opts {
		o(d)
	}
	t.Cleanup(d.cleanup)
	if err := d.net.writeConfig(d.cniConf); err != nil {
		t.Fatalf("CNI config: %v", err)
	}
	d.importImage(layoutDir)
	d.start()
	return d
}

// globalFlags are the flags that point berth at this daemon's directories.
func (d *daemon) globalFlags() []string {
	return []string{
		"--config", d.config, "--root", d.root, "--state", d.state,
		"--cni-conf-dir", d.cniConf, "--cni-bin-dir", cniBinDir, "--log-level", "debug",
	}
}

// importImage runs `berth image import` on an OCI layout.
func (d *daemon) importImage(layout string) {
	d.t.Helper()
	args := append([]string{"image", "import"}, d.globalFlags()...)
	out, err := exec.Command(filepath.Join(binDir, "berth"), append(args, layout)...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("berth image import %s: %v\n%s", layout, err, out)
	}
}

// start launches `berth serve` and waits until it answers Version (it
// answers Unavailable while it recovers).
func (d *daemon) start() {
	d.t.Helper()
	if err := d.launch(); err != nil {
		d.t.Fatalf("berth serve: %v\n%s", err, d.logTail(60))
	}
}

func (d *daemon) launch() error {
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("daemon log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== berth serve started at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(filepath.Join(binDir, "berth"), append([]string{"serve"}, d.globalFlags()...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.cmd = cmd
	d.exited = make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(d.exited) //nolint:errcheck // exit seen via done
	return d.connect()
}

// connect dials the socket and waits for Version to succeed.
func (d *daemon) connect() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-d.exited:
			return fmt.Errorf("exited before it was ready: %v", d.cmd.ProcessState)
		default:
		}
		if _, err := os.Stat(d.socket); err == nil && d.conn == nil {
			conn, err := grpc.NewClient("unix://"+d.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return fmt.Errorf("dial %s: %w", d.socket, err)
			}
			d.conn = conn
			d.rt = runtimeapi.NewRuntimeServiceClient(conn)
			d.img = runtimeapi.NewImageServiceClient(conn)
		}
		if d.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := d.rt.Version(ctx, &runtimeapi.VersionRequest{})
			cancel()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("not ready after 30s: %w", err)
			}
		} else if time.Now().After(deadline) {
			return fmt.Errorf("socket %s did not appear in 30s", d.socket)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) running() bool {
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

func (d *daemon) closeConn() {
	if d.conn != nil {
		d.conn.Close()
		d.conn, d.rt, d.img = nil, nil, nil
	}
}

// kill9 kills the daemon with SIGKILL and waits for it; pods keep running.
func (d *daemon) kill9() {
	d.t.Helper()
	if !d.running() {
		return
	}
	d.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // our own child
	<-d.exited
	d.closeConn()
}

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop() {
	d.t.Helper()
	if !d.running() {
		d.closeConn()
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // our own child
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		d.t.Errorf("berth serve did not exit 20s after SIGTERM; killing it")
		d.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // our own child
		<-d.exited
	}
	d.closeConn()
	if st := d.cmd.ProcessState; st != nil && !st.Success() {
		d.t.Errorf("berth serve exited with %v after SIGTERM\n%s", st, d.logTail(30))
	}
}

// restart starts the daemon again on the same directories.
func (d *daemon) restart() {
	d.t.Helper()
	d.stopIfRunning()
	d.start()
}

func (d *daemon) stopIfRunning() {
	if d.running() {
		d.stop()
	}
}

// logTail returns the last n lines of the daemon's log.
func (d *daemon) logTail(n int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return "(no daemon log: " + err.Error() + ")"
	}
	lines := splitLines(string(b))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := "--- berth serve log (last lines) ---\n"
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}

// ctx returns a context for one RPC.
func (d *daemon) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	d.t.Cleanup(cancel)
	return ctx
}

func splitLines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }
