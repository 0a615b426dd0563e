package runc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/berth-dev/berth/internal/errdefs"
)

// ExecOpts are the options of runc exec. The process runs in the
// foreground: runc stays its parent and exits with its exit status.
type ExecOpts struct {
	// Process is the OCI process (runtime-spec "process" object) as JSON;
	// it is written to a private file and passed with --process.
	Process []byte
	// Terminal runs runc in a new session with Stdin (a pty slave from
	// OpenPTY, also given as Stdout and Stderr) as its controlling
	// terminal: runc copies between it and the container's own pty and
	// resizes that on SIGWINCH. Process must say "terminal": true.
	Terminal bool
	Stdin    *os.File
	Stdout   *os.File
	Stderr   *os.File
}

// Execution is one running "runc exec". Every process it starts (runc,
// runc init and the exec'd process, unless it moves itself) is in one
// process group led by runc, so KillAll reaches all of them. A terminal
// exec's process is in the session of the container's pty, so KillAll
// finds it through the parent links instead.
type Execution struct {
	id      string
	cmd     *exec.Cmd
	dir     string // holds the process file, pid file and runc's log
	pidFile string
	logPath string
}

// StartExec starts "runc exec" for container id and returns at once; the
// caller must call Wait.
func (r *Runc) StartExec(id string, o ExecOpts) (_ *Execution, err error) {
	if len(o.Process) == 0 {
		return nil, fmt.Errorf("runc exec %s: process: %w", id, errdefs.ErrInvalidArgument)
	}
	dir, err := os.MkdirTemp("", "runc-exec-")
	if err != nil {
		return nil, fmt.Errorf("runc exec %s: work dir: %w", id, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	processPath := filepath.Join(dir, "process.json")
	if err := os.WriteFile(processPath, o.Process, 0o600); err != nil {
		return nil, fmt.Errorf("runc exec %s: process file: %w", id, err)
	}
	e := &Execution{id: id, dir: dir, pidFile: filepath.Join(dir, "pid"), logPath: filepath.Join(dir, "log.json")}
	args := append(r.globalFlags(e.logPath), "exec", "--process", processPath, "--pid-file", e.pidFile)
	args = append(args, id)
	e.cmd = exec.Command(r.binary(), args...)
	e.cmd.Stdin, e.cmd.Stdout, e.cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.Terminal {
		if o.Stdin == nil {
			return nil, fmt.Errorf("runc exec %s: terminal: %w", id, errdefs.ErrInvalidArgument)
		}
		// A session leader leads its own process group, as Setpgid would.
		e.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("runc exec %s: start: %w", id, err)
	}
	return e, nil
}

// Pid returns the host pid of the exec'd process once runc wrote it, or 0.
func (e *Execution) Pid() int {
	b, err := os.ReadFile(e.pidFile)
	if err != nil {
		return 0
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pid); err != nil {
		return 0
	}
	return pid
}

// KillAll sends SIGKILL to runc's process group and to every descendant of
// the exec'd process, including those that left the group. Processes the
// exec'd process orphaned before this call and that changed their group
// are out of reach: they were reparented to the container's init.
func (e *Execution) KillAll() {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL) // the group may be gone
	if pid := e.Pid(); pid > 0 {
		killTree(pid)
	}
}

// KillProcesses sends SIGKILL to the exec'd process and every process
// descending from it, but not to runc: runc, their parent, stays to reap the
// exec'd process, which would otherwise be reparented to the container's
// init and linger as a zombie there (visible to pgrep) when that init does
// not reap.
func (e *Execution) KillProcesses() {
	if pid := e.Pid(); pid > 0 {
		killTree(pid)
	}
}

// Wait waits for runc to exit and returns the exec'd process's exit code
// (128+signal when a signal ended it). A failure of runc itself (the
// container does not exist or is not running) is an error.
func (e *Execution) Wait() (int, error) {
	defer os.RemoveAll(e.dir)
	err := e.cmd.Wait()
	if err == nil {
		return 0, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return -1, fmt.Errorf("runc exec %s: %w", e.id, err)
	}
	if msg := lastLogError(e.logPath); msg != "" {
		return -1, execLogError(e.id, msg)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return exitErr.ExitCode(), nil
}

func execLogError(id, msg string) error {
	what := "runc exec " + id
	switch {
	case strings.Contains(msg, "does not exist"):
		return fmt.Errorf("%s: %s: %w", what, msg, errdefs.ErrNotFound)
	case strings.Contains(msg, "cannot exec in a stopped") || strings.Contains(msg, "not running") ||
		strings.Contains(msg, "stopped container"):
		return fmt.Errorf("%s: %s: %w", what, msg, errdefs.ErrFailedPrecondition)
	}
	return fmt.Errorf("%s: %s", what, msg)
}
