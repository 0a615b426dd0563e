package monitord

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/monitor"
)

// stdio holds both sides of a container's standard streams while it is
// created: runc's ends are closed once runc create (or run) returns, the
// monitor's ends live as long as the container.
type stdio struct {
	runcIn, runcOut, runcErr *os.File // given to runc create or run
	stdinW                   *os.File // held open so stdin never sees EOF
	stdout, stderr           *os.File // read ends (stderr nil with a terminal)
	console                  *consoleSocket
}

// newFIFOs makes the container's stdout and stderr named pipes in its
// bundle directory (monitor.StdoutFIFO, StderrFIFO), and a stdin pipe when
// withStdin. The monitor reads them as it would pipes; being named, they
// outlive it: the daemon holds a read end so the container's writes do not
// fail while no monitor runs, and a new monitor opens them to read on.
func newFIFOs(bundle string, withStdin bool) (_ *stdio, err error) {
	s := &stdio{}
	defer func() {
		if err != nil {
			s.closeRuncSide()
			s.closeMonitorSide()
		}
	}()
	for _, f := range []struct {
		name     string
		read, wr **os.File
	}{{monitor.StdoutFIFO, &s.stdout, &s.runcOut}, {monitor.StderrFIFO, &s.stderr, &s.runcErr}} {
		if *f.read, *f.wr, err = makeFIFO(bundle, f.name); err != nil {
			return s, err
		}
	}
	if withStdin {
		if s.runcIn, s.stdinW, err = os.Pipe(); err != nil {
			return s, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	return s, nil
}

// makeFIFO (re)makes the FIFO name in dir and opens its read end (the
// monitor's, non-blocking) and its write end (runc's, blocking: the
// container inherits it).
func makeFIFO(dir, name string) (r, w *os.File, err error) {
	path := filepath.Join(dir, name)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("fifo %s: %w", path, err)
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, nil, fmt.Errorf("fifo %s: %w", path, err)
	}
	if r, err = monitor.OpenFIFO(dir, name); err != nil {
		return nil, nil, err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("fifo %s: write end: %w", path, err)
	}
	return r, os.NewFile(uintptr(fd), path), nil
}

// newTerminal prepares a console socket that runc sends the pty master to.
func newTerminal() (*stdio, error) {
	c, err := listenConsole()
	if err != nil {
		return nil, err
	}
	return &stdio{console: c}, nil
}

// receiveConsole waits for the pty master once runc create (or run) has
// returned; it becomes the container's stdout (and its stdin side).
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
