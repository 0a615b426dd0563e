package sdnotify

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// Notifier sends state changes to the service manager's notify socket.
// Its methods are safe for concurrent use; on a Notifier without a socket
// they do nothing.
type Notifier struct {
	socket   string        // NOTIFY_SOCKET as the daemon found it; "" when none
	watchdog time.Duration // WATCHDOG_USEC when meant for this process; 0 when none
	log      *slog.Logger
}

// FromEnvironment returns the Notifier of this process and removes
// NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from its environment, so
// that no child inherits them. Call it before the first child starts.
func FromEnvironment(log *slog.Logger) *Notifier {
	n := &Notifier{socket: os.Getenv("NOTIFY_SOCKET"), log: log}
	// WATCHDOG_PID other than ours (the variables leaked from a parent)
	// reads as 0: no watchdog.
	watchdog, err := daemon.SdWatchdogEnabled(true)
	if err != nil {
		log.Warn("systemd watchdog: WATCHDOG_USEC ignored", "error", err)
	}
	if err := os.Unsetenv("NOTIFY_SOCKET"); err != nil {
		log.Warn("systemd notify: unset NOTIFY_SOCKET", "error", err)
	}
	if n.socket != "" {
		n.watchdog = watchdog
	}
	return n
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n.socket != "" }

// WatchdogInterval is the service manager's watchdog timeout (WatchdogSec),
// 0 when it has none.
func (n *Notifier) WatchdogInterval() time.Duration { return n.watchdog }

// Ready says start-up (or a reload) is complete; status is a line for
// `systemctl status`.
func (n *Notifier) Ready(status string) {
	n.send(daemon.SdNotifyReady, statusLine(status))
}

// Reloading says the daemon is re-reading its configuration; Ready ends it.
// MONOTONIC_USEC lets Type=notify-reload (systemd 253+) match it to its
// reload request; Type=notify does not need it.
func (n *Notifier) Reloading(status string) {
	lines := []string{daemon.SdNotifyReloading, statusLine(status)}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
		lines = append(lines, "MONOTONIC_USEC="+strconv.FormatInt(ts.Nano()/1000, 10))
	}
	n.send(lines...)
}

// Stopping says the daemon is shutting down (pods keep running).
func (n *Notifier) Stopping(status string) {
	n.send(daemon.SdNotifyStopping, statusLine(status))
}

// StartWatchdog pings the service manager at half its watchdog timeout
// until ctx ends or the returned stop is called (stop waits for the pinger;
// it is idempotent). alive, when not nil, is asked before each ping: a
// false answer skips it, so a daemon that cannot serve is restarted. No
// watchdog: nothing runs.
func (n *Notifier) StartWatchdog(ctx context.Context, alive func(context.Context) bool) (stop func()) {
	if n.socket == "" || n.watchdog <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.pingLoop(ctx, n.watchdog/2, alive)
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

func (n *Notifier) pingLoop(ctx context.Context, every time.Duration, alive func(context.Context) bool) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		if alive == nil || alive(ctx) {
			n.send(daemon.SdNotifyWatchdog)
		} else if ctx.Err() == nil {
			n.log.Warn("systemd watchdog: daemon not alive; ping skipped")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func statusLine(status string) string {
	// One line: a newline would start another assignment.
	return "STATUS=" + strings.ReplaceAll(status, "\n", " ")
}

// send writes one datagram of newline-separated assignments.
func (n *Notifier) send(lines ...string) {
	if n.socket == "" {
		return
	}
	if err := sendDatagram(n.socket, strings.Join(lines, "\n")+"\n"); err != nil {
		n.log.Warn("systemd notify", "message", lines[0], "error", err)
	}
}

// sendDatagram sends msg to the unixgram socket addr (a path, or "@name"
// for the abstract namespace, which net maps).
func sendDatagram(addr, msg string) error {
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify socket %s: %w", addr, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("notify socket %s: write: %w", addr, err)
	}
	return nil
}
