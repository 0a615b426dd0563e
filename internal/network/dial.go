package network

import (
	"context"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// DialInNamespace connects to addr (an IP literal and port, no host name
// lookups) from inside the network namespace at netnsPath, as port
// forwarding needs. The socket is created inside the namespace and stays
// there; the calling goroutine's thread is switched back before it is
// returned to the scheduler, or dies with it if that fails.
func DialInNamespace(ctx context.Context, netnsPath, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) == nil {
		return nil, fmt.Errorf("dial %s in netns %s: address: want ip:port: %w", addr, netnsPath, errdefs.ErrInvalidArgument)
	}
	target, err := os.Open(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("dial %s: netns %s: %w", addr, netnsPath, err)
	}
	defer target.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	var r result
	onSpareThread(func() bool {
		var restored bool
		r.conn, r.err, restored = dialOnLockedThread(ctx, int(target.Fd()), network, addr)
		return restored
	})
	if r.err != nil {
		return nil, fmt.Errorf("dial %s in netns %s: %w", addr, netnsPath, r.err)
	}
	return r.conn, nil
}

// dialOnLockedThread runs on a spare locked thread (onSpareThread); restored
// is false when the thread could not be switched back to its namespace, so
// that it stays locked and Go ends it.
func dialOnLockedThread(ctx context.Context, targetFD int, network, addr string) (_ net.Conn, _ error, restored bool) {
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, fmt.Errorf("own netns: %w", err), true
	}
	defer own.Close()
	if err := unix.Setns(targetFD, unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("setns: %w", err), true
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, addr)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("setns back: %w", err), false
	}
	return conn, dialErr, true
}
