package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// dialer opens probe connections with SO_LINGER set to one second, so that
// frequent probes do not leave the node short of ports in TIME_WAIT.
func dialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 1})
		})
		if err != nil {
			return err
		}
		return sockErr
	}}
}

// tcpProbe succeeds when a TCP connection opens within the timeout.
func tcpProbe(ctx context.Context, a *v1.TCPSocketAction, t Target, timeout time.Duration) outcome {
	host, err := t.host(a.Host)
	if err != nil {
		return unknown(err)
	}
	port, err := t.resolvePort(a.Port)
	if err != nil {
		return unknown(err)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := dialer().DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return failure(fmt.Sprintf("dial tcp %s: no connection within %v", addr, timeout))
		}
		return failure(err.Error())
	}
	_ = conn.Close()
	return success("")
}
