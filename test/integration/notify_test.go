package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// notification is one datagram berth serve sent to the notify socket; at
// READY=1 the receiver also asks the CRI socket for Version.
type notification struct {
	msg      string
	at       time.Time // when the listener read it, before any check of its own
	criReady error     // Version's answer when msg is READY=1
}

// notifyListener plays systemd's side of Type=notify: a unixgram socket of
// the test's own; for each READY=1 it calls Version on the one CRI socket
// under stateParent at once, to see whether the daemon answers by then.
func notifyListener(t *testing.T, stateParent string) (string, <-chan notification) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); conn.Close() })
	out := make(chan notification, 32)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return // closed at cleanup
			}
			note := notification{msg: string(buf[:n]), at: time.Now()}
			if strings.HasPrefix(note.msg, "READY=1\n") {
				note.criReady = criVersion(stateParent)
			}
			select {
			case out <- note:
			case <-done: // the test is over (its cleanup restarts the daemon)
				return
			}
		}
	}()
	return path, out
}

// criVersion calls Version on the CRI socket of the daemon under parent.
func criVersion(parent string) error {
	socks, err := filepath.Glob(filepath.Join(parent, "bt-*", "berth.sock"))
	if err != nil || len(socks) != 1 {
		return fmt.Errorf("CRI sockets under %s: %v, %v", parent, socks, err)
	}
	conn, err := grpc.NewClient("unix://"+socks[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err
}

func nextNotification(t *testing.T, notes <-chan notification, wantPrefix string) notification {
	t.Helper()
	select {
	case note := <-notes:
		if !strings.HasPrefix(note.msg, wantPrefix) {
			t.Fatalf("notification %q; want %q first", note.msg, wantPrefix)
		}
		return note
	case <-time.After(30 * time.Second):
		t.Fatalf("no %q notification in 30s", wantPrefix)
	}
	return notification{}
}

// waitForLog waits up to 20s until the daemon's log holds want n times.
func waitForLog(t *testing.T, d *daemon, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(d.LogTail(1<<30), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's log lacks %d× %q\n%s", n, want, d.LogTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeUnderSystemdNotify runs berth serve as a Type=notify unit would:
// READY=1 once CRI answers, the pid file, SIGHUP reloading the log level
// with RELOADING=1/READY=1 (and keeping it when the new file is invalid),
// STOPPING=1 and the pid file gone after SIGTERM.
func TestServeUnderSystemdNotify(t *testing.T) {
	stateParent := t.TempDir()
	sock, notes := notifyListener(t, stateParent)
	base, err := os.ReadFile(emptyConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	writeCfg := func(level string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("log_level = %q\n%s", level, base)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("warn")
	d := startDaemon(t, func(_ *testing.T, o *harness.Options) {
		o.Config, o.StateParent, o.ConfigLogLevel = cfgPath, stateParent, true
		o.Env = []string{"NOTIFY_SOCKET=" + sock}
	})

	ready := nextNotification(t, notes, "READY=1\n")
	if ready.criReady != nil {
		t.Errorf("READY=1 came before the CRI socket answered Version: %v", ready.criReady)
	}
	pid, err := os.ReadFile(filepath.Join(d.State, "berth.pid"))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(d.Pid()) {
		t.Errorf("pid file: %q, %v; want %d", pid, err, d.Pid())
	}
	if strings.Contains(d.LogTail(1<<30), `msg="berth ready"`) {
		t.Errorf("log_level = warn, but info lines were logged:\n%s", d.LogTail(20))
	}

	// Each READY=1 makes the listener call Version too: at debug, its call
	// and the test's are logged, two per reload.
	writeCfg("debug")
	if err := d.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	nextNotification(t, notes, "RELOADING=1\n")
	nextNotification(t, notes, "READY=1\n")
	waitForLog(t, d, `msg="config reloaded" changed=[log_level] log_level=debug`, 1)
	if _, err := d.RT.Version(d.ctx(), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, d, `level=DEBUG msg=rpc method=/runtime.v1.RuntimeService/Version`, 2)

	writeCfg("loud")
	if err := d.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	nextNotification(t, notes, "RELOADING=1\n")
	nextNotification(t, notes, "READY=1\n")
	waitForLog(t, d, `config reload failed; the running configuration is kept`, 1)
	if _, err := d.RT.Version(d.ctx(), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, d, `level=DEBUG msg=rpc method=/runtime.v1.RuntimeService/Version`, 4)

	writeCfg("warn") // the cleanup starts the daemon again with this file
	d.Stop()
	nextNotification(t, notes, "STOPPING=1\n")
	if _, err := os.Stat(filepath.Join(d.State, "berth.pid")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pid file after SIGTERM: %v; want it removed", err)
	}
}

// TestServeWatchdogPings sets a watchdog (WATCHDOG_USEC, as WatchdogSec
// does): after READY=1, berth serve pings at half of it while its CRI
// socket answers, and stops pinging when it stops.
func TestServeWatchdogPings(t *testing.T) {
	stateParent := t.TempDir()
	sock, notes := notifyListener(t, stateParent)
	const timeout = 400 * time.Millisecond
	d := startDaemon(t, func(_ *testing.T, o *harness.Options) {
		o.StateParent = stateParent
		o.Env = []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=" + strconv.Itoa(int(timeout/time.Microsecond))}
	})
	// Times are the listener's reads: the test's own receive may lag behind
	// (READY=1's CRI check runs before it is handed on).
	start := nextNotification(t, notes, "READY=1\n").at
	var last notification
	for range 3 {
		last = nextNotification(t, notes, "WATCHDOG=1\n")
	}
	// The first ping comes at READY=1, the next two timeout/2 apart each.
	if elapsed := last.at.Sub(start); elapsed < timeout-50*time.Millisecond {
		t.Errorf("3 pings in %v: faster than every %v", elapsed, timeout/2)
	}
	waitForLog(t, d, `msg="systemd watchdog" timeout=400ms ping_every=200ms`, 1)
	d.Stop()
	// Pings already sent may still be queued; STOPPING=1 comes after them.
	for {
		note := nextNotification(t, notes, "")
		if strings.HasPrefix(note.msg, "STOPPING=1\n") {
			return
		}
		if !strings.HasPrefix(note.msg, "WATCHDOG=1\n") {
			t.Fatalf("notification %q after SIGTERM; want WATCHDOG=1 or STOPPING=1", note.msg)
		}
	}
}
