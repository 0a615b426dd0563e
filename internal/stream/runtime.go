package stream

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// runtime implements streaming.Runtime on berth's services.
type runtime struct {
	cfg Config
}

// exitError carries a non-zero exit code in the shape the streaming
// library reports to the client (k8s.io/utils/exec.ExitError).
type exitError struct{ code int }

func (e exitError) Error() string   { return fmt.Sprintf("command exited with code %d", e.code) }
func (e exitError) String() string  { return e.Error() }
func (e exitError) Exited() bool    { return true }
func (e exitError) ExitStatus() int { return e.code }

func (r *runtime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	st := pod.ExecStreams{Stdin: in, TTY: tty, Resize: windowSizes(ctx, resize)}
	if out != nil {
		st.Stdout = out
	}
	if errOut != nil {
		st.Stderr = errOut
	}
	code, err := r.cfg.Containers.Exec(ctx, id, cmd, st)
	closeAll(out, errOut)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitError{code: code}
	}
	return nil
}

func (r *runtime) Attach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	st := pod.ExecStreams{Stdin: in, TTY: tty, Resize: windowSizes(ctx, resize)}
	if out != nil {
		st.Stdout = out
	}
	if errOut != nil {
		st.Stderr = errOut
	}
	err := r.cfg.Containers.Attach(ctx, id, st)
	closeAll(out, errOut)
	return err
}

func (r *runtime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	sb, err := r.cfg.Sandboxes.Sandbox(sandboxID)
	if err != nil {
		return err
	}
	netns := sb.NetNS
	if sb.HostNetwork || netns == "" {
		netns = "/proc/self/ns/net"
	}
	if port <= 0 || port > 65535 {
		return fmt.Errorf("pod sandbox %s: port %d: %w", sb.ID, port, errdefs.ErrInvalidArgument)
	}
	conn, err := r.cfg.Dial(ctx, netns, "tcp4", loopback(port))
	if err != nil {
		return fmt.Errorf("pod sandbox %s: port %d: %w", sb.ID, port, err)
	}
	defer conn.Close()
	return splice(conn, stream)
}

// splice copies both ways until one side ends, then ends the other.
func splice(conn net.Conn, stream io.ReadWriteCloser) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(conn, stream) // the client hung up
		if hc, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite() // the peer may be gone
		} else {
			conn.Close()
		}
	}()
	_, err := io.Copy(stream, conn)
	stream.Close()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("port forward: %w", err)
	}
	return nil
}

// windowSizes converts the library's resize events until ctx ends.
func windowSizes(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan pod.WindowSize {
	if in == nil {
		return nil
	}
	out := make(chan pod.WindowSize)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case size, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- pod.WindowSize{Width: size.Width, Height: size.Height}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func closeAll(ws ...io.WriteCloser) {
	for _, w := range ws {
		if w != nil {
			w.Close()
		}
	}
}
