package kube

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one component the test runs as its child, in a process group
// of its own, with stdout and stderr in a log file that is kept across
// restarts.
type Process struct {
	Name    string
	Bin     string
	Args    []string
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs the process.
func (p *Process) Start() error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return nil
}

// Pid is the process id, 0 before Start.
func (p *Process) Pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the process ended; it is false before Start.
func (p *Process) Exited() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// ExitStatus describes how the process ended.
func (p *Process) ExitStatus() string {
	if !p.Exited() {
		return "running"
	}
	return p.cmd.ProcessState.String()
}

// Stop ends the process by pid: SIGTERM, then SIGKILL after grace. It
// returns an error when the process had exited on its own or needed
// SIGKILL; a process never started or already stopped is a no-op.
func (p *Process) Stop(grace time.Duration) error {
	if p.cmd == nil {
		return nil
	}
	defer func() { p.cmd = nil }()
	if p.Exited() {
		return fmt.Errorf("%s exited on its own: %v", p.Name, p.cmd.ProcessState)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit %v after SIGTERM; killed", p.Name, grace)
	}
}

// LogTail is the last n lines of the log, with a header.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- %s log %s (last lines) ---\n%s", p.Name, p.LogPath, strings.Join(lines, "\n"))
}
