package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/runc"
)

// MaxExecOutput bounds what ExecSync keeps of stdout and stderr together;
// the rest is read and dropped. api.proto allows 16 MiB a stream, but the
// answer must fit in one CRI message, and kubelet's client (like berth's
// server) takes 16 MiB at most: the two streams share one budget a little
// below that.
const MaxExecOutput = 16<<20 - 64<<10

// execDrainTimeout bounds how long output is read after the exec'd process
// ended: a background child that keeps the pipes open must not hold the
// call (containerd#9568).
const execDrainTimeout = 2 * time.Second

// ExecResult is what ExecSync returns.
type ExecResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int32
}

// ExecSync runs cmd in a running container and returns its output and exit
// code. A timeout > 0 bounds the call: when it passes, the exec'd process
// and all its descendants are killed, the output drained for a bounded
// time, and the error wraps context.DeadlineExceeded.
func (s *Service) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	rec, err := s.runningContainer(id)
	if err != nil {
		return ExecResult{}, err
	}
	process, err := execProcess(&rec, cmd, false)
	if err != nil {
		return ExecResult{}, err
	}
	stdout, stderr := newBoundedBuffers(MaxExecOutput)
	pipes, err := newOutputPipes(stdout, stderr)
	if err != nil {
		return ExecResult{}, fmt.Errorf("container %s: exec: %w", rec.ID, err)
	}
	exe, err := s.runtimeFor(rec.RuntimeHandler).StartExec(rec.ID, runc.ExecOpts{Process: process, Stdout: pipes.outW, Stderr: pipes.errW})
	pipes.closeWriters()
	if err != nil {
		pipes.closeReaders()
		return ExecResult{}, fmt.Errorf("container %s: %w", rec.ID, err)
	}
	code, waitErr := waitExec(ctx, exe, timeout)
	pipes.drain(execDrainTimeout)
	if waitErr != nil {
		return ExecResult{}, fmt.Errorf("container %s: exec %q: %w", rec.ID, cmd[0], waitErr)
	}
	return ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

// waitExec waits for an exec to finish; when timeout (if > 0) passes or ctx
// ends first it kills the exec's whole process tree and reports why.
func waitExec(ctx context.Context, exe *runc.Execution, timeout time.Duration) (int, error) {
	type result struct {
		code int
		err  error
	}
	waited := make(chan result, 1)
	go func() {
		code, err := exe.Wait()
		waited <- result{code, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	var cause error
	select {
	case r := <-waited:
		return r.code, r.err
	case <-expired:
		cause = fmt.Errorf("timeout %s: %w", timeout, context.DeadlineExceeded)
	case <-ctx.Done():
		cause = ctx.Err()
	}
	// Kill the exec's processes and let runc reap them and exit; kill runc
	// too only if it does not.
	exe.KillProcesses()
	select {
	case <-waited:
	case <-time.After(execReapGrace):
		exe.KillAll()
		<-waited
	}
	return -1, cause
}

// execReapGrace is how long runc gets to reap a killed exec and exit.
const execReapGrace = 2 * time.Second

// runningContainer returns the record of a running container; one in any
// other state is FailedPrecondition.
func (s *Service) runningContainer(id string) (Container, error) {
	e, err := s.findContainer(id)
	if err != nil {
		return Container{}, err
	}
	s.refreshExit(e)
	rec := e.snapshot()
	if rec.State != ContainerRunning {
		return Container{}, fmt.Errorf("container %s is %s, not running: %w", rec.ID, rec.State, errdefs.ErrFailedPrecondition)
	}
	return rec, nil
}

// execProcess is the container's own process (env, cwd, user,
// capabilities, rlimits...) from its bundle, running cmd instead.
func execProcess(rec *Container, cmd []string, tty bool) ([]byte, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, fmt.Errorf("container %s: exec: cmd: empty: %w", rec.ID, errdefs.ErrInvalidArgument)
	}
	spec, err := readBundleSpec(rec.Bundle)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", rec.ID, err)
	}
	if spec.Process == nil {
		return nil, fmt.Errorf("container %s: bundle %s: no process", rec.ID, filepath.Join(rec.Bundle, "config.json"))
	}
	p := *spec.Process
	p.Args = cmd
	p.Terminal = tty
	p.ConsoleSize = nil
	return json.Marshal(&p)
}

// outputPipes carry an exec's stdout and stderr into writers.
type outputPipes struct {
	outR, outW, errR, errW *os.File
	copied                 sync.WaitGroup
}

func newOutputPipes(stdout, stderr io.Writer) (*outputPipes, error) {
	p := &outputPipes{}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.outR.Close()
		p.outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p.copied.Add(2)
	go p.copy(stdout, p.outR)
	go p.copy(stderr, p.errR)
	return p, nil
}

func (p *outputPipes) copy(w io.Writer, r *os.File) {
	defer p.copied.Done()
	_, _ = io.Copy(w, r) // ends at EOF or when the reader is closed
}

func (p *outputPipes) closeWriters() {
	p.outW.Close()
	p.errW.Close()
}

func (p *outputPipes) closeReaders() {
	p.outR.Close()
	p.errR.Close()
}

// drain waits up to timeout for both copies to reach EOF, then closes the
// read ends, which ends the copies, and waits for them.
func (p *outputPipes) drain(timeout time.Duration) {
	done := make(chan struct{})
	go func() { p.copied.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
	p.closeReaders()
	<-done
}

// boundedBuffer keeps what is written to it while its budget (shared with
// its sibling) lasts and drops the rest, without ever failing a write (the
// writer must keep draining its pipe).
type boundedBuffer struct {
	budget *outputBudget
	buf    []byte
}

// outputBudget is the bytes two boundedBuffers may still keep; its mutex
// guards both buffers.
type outputBudget struct {
	mu   sync.Mutex
	left int
}

// newBoundedBuffers returns two buffers that keep max bytes between them.
func newBoundedBuffers(max int) (*boundedBuffer, *boundedBuffer) {
	budget := &outputBudget{left: max}
	return &boundedBuffer{budget: budget}, &boundedBuffer{budget: budget}
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.budget.mu.Lock()
	defer b.budget.mu.Unlock()
	if keep := min(b.budget.left, len(p)); keep > 0 {
		b.buf = append(b.buf, p[:keep]...)
		b.budget.left -= keep
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (b *boundedBuffer) Bytes() []byte {
	b.budget.mu.Lock()
	defer b.budget.mu.Unlock()
	return append([]byte(nil), b.buf...)
}
