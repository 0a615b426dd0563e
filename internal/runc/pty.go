package runc

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// OpenPTY opens a new pseudo-terminal pair. The master is non-blocking (it
// uses the runtime poller, so Close interrupts a Read); the slave is meant
// to become a child's stdio and controlling terminal.
func OpenPTY() (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("pty: /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty: unlock: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty: number: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	slave, err = os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty %s: %w", name, err)
	}
	return master, slave, nil
}

// Resize sets the window size of a pty; the process group in the
// terminal's foreground gets SIGWINCH.
func Resize(pty *os.File, width, height uint16) error {
	ws := &unix.Winsize{Col: width, Row: height}
	raw, err := pty.SyscallConn() // Fd() would make the file blocking
	if err != nil {
		return fmt.Errorf("pty %s: window size: %w", pty.Name(), err)
	}
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws)
	}); err != nil {
		return fmt.Errorf("pty %s: window size: %w", pty.Name(), err)
	}
	if ioctlErr != nil {
		return fmt.Errorf("pty %s: window size: %w", pty.Name(), ioctlErr)
	}
	return nil
}
