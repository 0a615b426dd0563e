package sdnotify

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listen binds a unixgram socket of the test's own and points
// NOTIFY_SOCKET at it.
func listen(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

// receive returns the next datagram, failing the test after 5s.
func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

func quietLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

func TestReadyReloadingStopping(t *testing.T) {
	conn := listen(t)
	var logs bytes.Buffer
	n := FromEnvironment(quietLogger(&logs))
	if _, set := os.LookupEnv("NOTIFY_SOCKET"); set {
		t.Error("NOTIFY_SOCKET is still in the environment: children would inherit it")
	}
	if !n.Enabled() {
		t.Fatal("Enabled() = false with NOTIFY_SOCKET set")
	}
	n.Ready("berth ready\nsecond line")
	if got, want := receive(t, conn), "READY=1\nSTATUS=berth ready second line\n"; got != want {
		t.Errorf("ready: got %q, want %q", got, want)
	}
	n.Reloading("reloading")
	got := receive(t, conn)
	if !strings.HasPrefix(got, "RELOADING=1\nSTATUS=reloading\nMONOTONIC_USEC=") {
		t.Errorf("reloading: got %q", got)
	}
	usec := strings.TrimSuffix(strings.TrimPrefix(got[strings.LastIndex(got, "MONOTONIC_USEC="):], "MONOTONIC_USEC="), "\n")
	if v, err := strconv.ParseInt(usec, 10, 64); err != nil || v <= 0 {
		t.Errorf("MONOTONIC_USEC=%q: not a positive number", usec)
	}
	n.Stopping("shutting down")
	if got, want := receive(t, conn), "STOPPING=1\nSTATUS=shutting down\n"; got != want {
		t.Errorf("stopping: got %q, want %q", got, want)
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected log: %s", logs.String())
	}
}

func TestWatchdogPingsAtHalfTheTimeout(t *testing.T) {
	conn := listen(t)
	const timeout = 200 * time.Millisecond
	t.Setenv("WATCHDOG_USEC", strconv.Itoa(int(timeout/time.Microsecond)))
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var logs bytes.Buffer
	n := FromEnvironment(quietLogger(&logs))
	for _, v := range []string{"WATCHDOG_USEC", "WATCHDOG_PID"} {
		if _, set := os.LookupEnv(v); set {
			t.Errorf("%s is still in the environment", v)
		}
	}
	if n.WatchdogInterval() != timeout {
		t.Fatalf("WatchdogInterval() = %v, want %v", n.WatchdogInterval(), timeout)
	}
	stop := n.StartWatchdog(context.Background(), nil)
	defer stop()
	var at []time.Time
	for range 4 {
		if got := receive(t, conn); got != "WATCHDOG=1\n" {
			t.Fatalf("got %q, want WATCHDOG=1", got)
		}
		at = append(at, time.Now())
	}
	stop()
	// Pings come every timeout/2 (the first at once): never faster than
	// that on the whole, and each well inside the timeout. A late delivery
	// may shorten the next gap, so the lower bound is on the sum.
	if span := at[len(at)-1].Sub(at[0]); span < 3*timeout/2-10*time.Millisecond {
		t.Errorf("4 pings in %v; want them timeout/2 = %v apart", span, timeout/2)
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap >= timeout {
			t.Errorf("ping %d came %v after the previous one: past the %v timeout", i, gap, timeout)
		}
	}
}

func TestWatchdogSkipsPingsWhenNotAlive(t *testing.T) {
	conn := listen(t)
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var logs bytes.Buffer
	n := FromEnvironment(quietLogger(&logs))
	asked := make(chan struct{}, 16)
	stop := n.StartWatchdog(context.Background(), func(context.Context) bool {
		select {
		case asked <- struct{}{}:
		default:
		}
		return false
	})
	for range 3 {
		<-asked
	}
	stop()
	if err := conn.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 64)); err == nil {
		t.Errorf("a ping was sent although the daemon was not alive (%d bytes)", n)
	}
}

func TestWatchdogOfAnotherProcessIsIgnored(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	var logs bytes.Buffer
	if n := FromEnvironment(quietLogger(&logs)); n.WatchdogInterval() != 0 {
		t.Errorf("WatchdogInterval() = %v for another process's watchdog, want 0", n.WatchdogInterval())
	}
}

func TestNothingWithoutNotifySocket(t *testing.T) {
	// A socket that would receive anything sent, but NOTIFY_SOCKET unset.
	conn := listen(t)
	if err := os.Unsetenv("NOTIFY_SOCKET"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var logs bytes.Buffer
	n := FromEnvironment(quietLogger(&logs))
	if n.Enabled() || n.WatchdogInterval() != 0 {
		t.Fatalf("Enabled() = %v, WatchdogInterval() = %v without NOTIFY_SOCKET", n.Enabled(), n.WatchdogInterval())
	}
	n.Ready("ready")
	n.Reloading("reloading")
	n.Stopping("stopping")
	n.StartWatchdog(context.Background(), nil)()
	if err := conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 64)); err == nil {
		t.Errorf("received %d bytes without NOTIFY_SOCKET", n)
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected log: %s", logs.String())
	}
}

func TestSendFailureIsLogged(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent.sock"))
	var logs bytes.Buffer
	FromEnvironment(quietLogger(&logs)).Ready("ready")
	if !strings.Contains(logs.String(), "systemd notify") || !strings.Contains(logs.String(), "READY=1") {
		t.Errorf("log = %q; want the failed READY=1", logs.String())
	}
}
