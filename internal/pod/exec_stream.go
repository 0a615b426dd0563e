package pod

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/runc"
)

// WindowSize is a terminal's size in characters: the monitor protocol's
// type, so that attach hands resizes to the monitor client as they come.
type WindowSize = monitor.TerminalSize

// ExecStreams are the streams of an interactive exec. Nil streams are not
// attached. With TTY, the terminal's output goes to Stdout and Stderr is
// unused; Resize, when not nil, carries window size changes.
type ExecStreams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	Resize <-chan WindowSize
}

// Exec runs cmd in a running container with the given streams and returns
// its exit code once it ends and its output is drained (bounded). When ctx
// ends first, the exec's process tree is killed.
func (s *Service) Exec(ctx context.Context, id string, cmd []string, st ExecStreams) (int, error) {
	rec, err := s.runningContainer(id)
	if err != nil {
		return -1, err
	}
	process, err := execProcess(&rec, cmd, st.TTY)
	if err != nil {
		return -1, err
	}
	var code int
	if st.TTY {
		code, err = s.execTerminal(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, process, st)
	} else {
		code, err = s.execPipes(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, process, st)
	}
	if err != nil {
		return -1, fmt.Errorf("container %s: exec %q: %w", rec.ID, cmd[0], err)
	}
	return code, nil
}

func (s *Service) execPipes(ctx context.Context, rt containerRuntime, id string, process []byte, st ExecStreams) (int, error) {
	pipes, err := newOutputPipes(orDiscard(st.Stdout), orDiscard(st.Stderr))
	if err != nil {
		return -1, err
	}
	opts := runc.ExecOpts{Process: process, Stdout: pipes.outW, Stderr: pipes.errW}
	var stdinW *os.File
	if st.Stdin != nil {
		if opts.Stdin, stdinW, err = os.Pipe(); err != nil {
			pipes.closeWriters()
			pipes.closeReaders()
			return -1, fmt.Errorf("stdin pipe: %w", err)
		}
		go copyAndClose(stdinW, st.Stdin)
	}
	exe, err := rt.StartExec(id, opts)
	pipes.closeWriters()
	if opts.Stdin != nil {
		opts.Stdin.Close()
	}
	if err != nil {
		pipes.closeReaders()
		if stdinW != nil {
			stdinW.Close()
		}
		return -1, err
	}
	code, err := waitExec(ctx, exe, 0)
	pipes.drain(execDrainTimeout)
	if stdinW != nil {
		stdinW.Close() // the stdin copy ends at its next write
	}
	return code, err
}

func (s *Service) execTerminal(ctx context.Context, rt containerRuntime, id string, process []byte, st ExecStreams) (int, error) {
	master, slave, err := runc.OpenPTY()
	if err != nil {
		return -1, err
	}
	defer master.Close()
	resizeDone := make(chan struct{})
	defer close(resizeDone)
	go monitor.ForwardResizes(st.Resize, resizeDone, func(size WindowSize) error {
		_ = runc.Resize(master, size.Width, size.Height) // a closed pty ends the exec anyway
		return nil                                       // keep applying later sizes
	})
	exe, err := rt.StartExec(id, runc.ExecOpts{Process: process, Terminal: true, Stdin: slave, Stdout: slave, Stderr: slave})
	slave.Close()
	if err != nil {
		return -1, err
	}
	if st.Stdin != nil {
		go io.Copy(master, st.Stdin) //nolint:errcheck // ends when the master is closed or stdin ends
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(orDiscard(st.Stdout), master) // EIO once runc closed the slave
	}()
	code, err := waitExec(ctx, exe, 0)
	drainOrClose(copied, master)
	return code, err
}

// drainOrClose waits up to execDrainTimeout for a copy to finish, then
// closes its source to end it.
func drainOrClose(copied <-chan struct{}, src io.Closer) {
	select {
	case <-copied:
	case <-time.After(execDrainTimeout):
		src.Close()
		<-copied
	}
}

func copyAndClose(w io.WriteCloser, r io.Reader) {
	_, _ = io.Copy(w, r) // the process may have exited
	w.Close()
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
