package containerd

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// daemon is a long-running child of the test (containerd or the agent):
// its output goes to a log file kept across restarts, and it runs in a
// process group of its own so that a Ctrl-C of the test reaches it only
// through the test's cleanup.
type daemon struct {
	name    string
	argv    []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	stopped bool          // stop was called: an exit is expected
}

// start launches the daemon; it does not wait for it to be ready.
func (d *daemon) start() error {
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", d.name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s started at %s: %s\n", d.name, time.Now().Format(time.RFC3339Nano), strings.Join(d.argv, " "))
	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", d.name, err)
	}
	d.cmd, d.exited, d.stopped = cmd, make(chan struct{}), false
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(d.exited) // the exit is seen through done
	return nil
}

// running reports whether the daemon's process is alive.
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

// crashed reports whether the daemon exited without being asked to.
func (d *daemon) crashed() bool {
	return d.cmd != nil && !d.stopped && !d.running()
}

// pid is the daemon's process id while it runs, else 0.
func (d *daemon) pid() int {
	if !d.running() {
		return 0
	}
	return d.cmd.Process.Pid
}

// stop sends SIGTERM and waits up to timeout, then kills it. It returns
// an error when the daemon had to be killed or exited with a failure.
func (d *daemon) stop(timeout time.Duration) error {
	if !d.running() {
		return nil
	}
	d.stopped = true
	_ = d.cmd.Process.Signal(syscall.SIGTERM) // our own child
	select {
	case <-d.exited:
	case <-time.After(timeout):
		_ = d.cmd.Process.Signal(syscall.SIGKILL) // our own child
		<-d.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", d.name, timeout)
	}
	if st := d.cmd.ProcessState; !st.Success() {
		return fmt.Errorf("%s exited with %v after SIGTERM", d.name, st)
	}
	return nil
}

// logTail returns the last n lines of the daemon's log.
func (d *daemon) logTail(n int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return fmt.Sprintf("(no %s log: %v)\n", d.name, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- %s log %s (last %d lines) ---\n%s\n", d.name, d.logPath, len(lines), strings.Join(lines, "\n"))
}
