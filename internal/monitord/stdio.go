package monitord

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// stdio holds both sides of a container's standard streams while it is
// created: runc's ends are closed once runc create returns, the monitor's
// ends live as long as the container.
type stdio struct {
	runcIn, runcOut, runcErr *os.File // given to runc create
	stdinW                   *os.File // held open so stdin never sees EOF
	stdout, stderr           *os.File // read ends (stderr nil with a terminal)
	console                  *consoleSocket
}

// newPipes makes stdout/stderr pipes, and a stdin pipe when withStdin.
func newPipes(withStdin bool) (_ *stdio, err error) {
	s := &stdio{}
	defer func() {
		if err != nil {
			s.closeRuncSide()
			s.closeMonitorSide()
		}
	}()
	if s.stdout, s.runcOut, err = os.Pipe(); err != nil {
		return s, fmt.Errorf("stdout pipe: %w", err)
	}
	if s.stderr, s.runcErr, err = os.Pipe(); err != nil {
		return s, fmt.Errorf("stderr pipe: %w", err)
	}
	if withStdin {
		if s.runcIn, s.stdinW, err = os.Pipe(); err != nil {
			return s, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	return s, nil
}

// newTerminal prepares a console socket that runc sends the pty master to.
func newTerminal() (*stdio, error) {
	c, err := listenConsole()
	if err != nil {
		return nil, err
	}
	return &stdio{console: c}, nil
}

// receiveConsole waits for the pty master once runc create has returned;
// it becomes the container's stdout (and its stdin side).
func (s *stdio) receiveConsole(timeout time.Duration) error {
	master, err := s.console.receive(timeout)
	if err != nil {
		return err
	}
	s.stdout = master
	return nil
}

func (s *stdio) closeRuncSide() {
	for _, f := range []*os.File{s.runcIn, s.runcOut, s.runcErr} {
		if f != nil {
			f.Close()
		}
	}
	s.runcIn, s.runcOut, s.runcErr = nil, nil, nil
	if s.console != nil {
		s.console.close()
		s.console = nil
	}
}

// closeMonitorSide closes the monitor's ends; a copy blocked reading them
// returns.
func (s *stdio) closeMonitorSide() {
	for _, f := range []*os.File{s.stdinW, s.stdout, s.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// consoleSocket is a one-shot unix socket for runc --console-socket.
type consoleSocket struct {
	dir      string
	path     string
	listener *net.UnixListener
	received chan consoleResult
}

type consoleResult struct {
	master *os.File
	err    error
}

func listenConsole() (*consoleSocket, error) {
	dir, err := os.MkdirTemp("", "berth-console-")
	if err != nil {
		return nil, fmt.Errorf("console socket: directory: %w", err)
	}
	path := filepath.Join(dir, "c.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("console socket %s: %w", path, err)
	}
	c := &consoleSocket{dir: dir, path: path, listener: l, received: make(chan consoleResult, 1)}
	go func() { c.received <- acceptMaster(l) }()
	return c, nil
}

func (c *consoleSocket) receive(timeout time.Duration) (*os.File, error) {
	select {
	case r := <-c.received:
		return r.master, r.err
	case <-time.After(timeout):
		c.listener.Close() // ends acceptMaster
		if r := <-c.received; r.master != nil {
			r.master.Close()
		}
		return nil, fmt.Errorf("console socket %s: no pty master after %s", c.path, timeout)
	}
}

func (c *consoleSocket) close() {
	c.listener.Close()
	os.RemoveAll(c.dir)
}

// acceptMaster accepts runc's connection and receives one fd by SCM_RIGHTS.
func acceptMaster(l *net.UnixListener) consoleResult {
	conn, err := l.AcceptUnix()
	if err != nil {
		return consoleResult{err: fmt.Errorf("console socket: accept: %w", err)}
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // fails only on a closed conn, which the next read or write reports
	buf := make([]byte, 4096)                                  // runc sends the pty name
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return consoleResult{err: fmt.Errorf("console socket: receive: %w", err)}
	}
	fd, err := singleFD(oob[:oobn])
	if err != nil {
		return consoleResult{err: fmt.Errorf("console socket: %w", err)}
	}
	// Non-blocking, so os.File uses the poller and Close interrupts a Read.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return consoleResult{err: fmt.Errorf("console socket: pty master: %w", err)}
	}
	return consoleResult{master: os.NewFile(uintptr(fd), "pty-master")}
}

func singleFD(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, fmt.Errorf("control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, errors.New("control message: want exactly one fd")
	}
	return fds[0], nil
}
