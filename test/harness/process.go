package harness

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Process is a long-running child of a test (berth serve, containerd, the
// agent, kubelet, etcd, …): its stdout and stderr go to a log file kept
// across restarts (each start adds a header line), it runs in a process
// group of its own, so that a Ctrl-C of the test reaches it only through
// the test's cleanup, and it gets SIGKILL when the test process dies.
type Process struct {
	Name    string
	Bin     string
	Args    []string
	LogPath string
	Env     []string // added to the test's own environment
	// CleanExit makes Stop fail when SIGTERM ends the process with a
	// failure status.
	CleanExit bool

	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	asked  bool          // Stop or Kill ended this run: the exit is expected
}

// Start launches the process; it does not wait for it to be ready.
func (p *Process) Start() error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s log: %w", p.Name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s started at %s\n", p.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that forked, not the test process: a
	// test that ends a goroutine locked to a thread it moved into a netns
	// ends that thread, and a child forked on it got SIGKILL (an agent
	// died mid-test so). The child is forked on a thread locked for its
	// whole life, which no other goroutine can take.
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.exited, p.asked = cmd, exited, false
	return nil
}

// Started reports whether Start ever succeeded.
func (p *Process) Started() bool { return p.cmd != nil }

// Running reports whether the process was started and has not ended.
func (p *Process) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited reports whether the process ended on its own: false before
// Start, while it runs and after Stop or Kill.
func (p *Process) Exited() bool { return p.cmd != nil && !p.asked && !p.Running() }

// Pid is the process id while it runs, else 0.
func (p *Process) Pid() int {
	if !p.Running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// ExitStatus describes how the last run ended ("running" while it runs).
func (p *Process) ExitStatus() string {
	if p.cmd == nil || p.Running() {
		return "running"
	}
	return p.cmd.ProcessState.String()
}

// Signal sends sig to the running process.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// Kill ends the process with SIGKILL and waits for it; a process that
// does not run is left alone.
func (p *Process) Kill() {
	if !p.Running() {
		return
	}
	p.asked = true
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop ends the process: SIGTERM, then SIGKILL after grace. It returns an
// error when the process had exited on its own, needed SIGKILL, or (with
// CleanExit) failed after SIGTERM; a process never started or already
// stopped is a no-op.
func (p *Process) Stop(grace time.Duration) error {
	if p.cmd == nil || p.asked {
		return nil
	}
	p.asked = true
	if !p.Running() {
		return fmt.Errorf("%s exited on its own: %v", p.Name, p.cmd.ProcessState)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit %v after SIGTERM; killed", p.Name, grace)
	}
	if st := p.cmd.ProcessState; p.CleanExit && !st.Success() {
		return fmt.Errorf("%s exited with %v after SIGTERM", p.Name, st)
	}
	return nil
}

// LogTail is the last n lines of the log, with a header.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no %s log: %v)\n", p.Name, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- %s log %s (last %d lines) ---\n%s\n", p.Name, p.LogPath, len(lines), strings.Join(lines, "\n"))
}
