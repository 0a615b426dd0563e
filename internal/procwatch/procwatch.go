package procwatch

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// ErrClosed is what Wait returns once Close ran.
var ErrClosed = errors.New("process watch closed")

// Process is one watched process.
type Process struct {
	pid  int
	file *os.File // the pidfd, non-blocking, in Go's poller
}

// Open starts watching pid.
func Open(pid int) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, errdefs.ErrInvalidArgument)
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("pid %d: gone: %w", pid, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pid %d: pidfd: %w", pid, err)
	}
	return &Process{pid: pid, file: os.NewFile(uintptr(fd), fmt.Sprintf("pidfd %d", pid))}, nil
}

// Pid is the watched process's pid.
func (p *Process) Pid() int { return p.pid }

// Fd is the pidfd, for callers that need it (pidfd_getfd, pidfd_send_signal);
// it stays valid until Close.
func (p *Process) Fd() int { return int(p.file.Fd()) }

// Exited reports whether the process has ended, without waiting.
func (p *Process) Exited() bool {
	rc, err := p.file.SyscallConn()
	if err != nil {
		return false
	}
	exited := false
	_ = rc.Control(func(fd uintptr) { exited = readable(fd) })
	return exited
}

// Wait blocks until the process ends (nil) or Close runs (ErrClosed).
func (p *Process) Wait() error {
	rc, err := p.file.SyscallConn()
	if err != nil {
		return ErrClosed
	}
	// A pidfd turns readable when its process ends; read(2) on it fails,
	// so readiness is checked with a zero-timeout poll.
	err = rc.Read(func(fd uintptr) bool { return readable(fd) })
	if err != nil {
		return ErrClosed
	}
	return nil
}

// Close ends the watch; a Wait in progress returns ErrClosed.
func (p *Process) Close() error { return p.file.Close() }

func readable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}
