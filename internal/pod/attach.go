package pod

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/internal/monitor"
)

// Attach connects st to a running container's stdio, which its pod's
// monitor holds, and returns when the session ends: the container's
// output ended, the client's stdin ended (without StdinOnce), or ctx is
// done. Stdin reaches the container only if it was created with Stdin;
// with TTY, the terminal's output goes to Stdout and Resize sets its size.
func (s *Service) Attach(ctx context.Context, id string, st ExecStreams) error {
	rec, err := s.runningContainer(id)
	if err != nil {
		return err
	}
	sb, err := s.findSandbox(rec.SandboxID)
	if err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	req := monitor.AttachRequest{Stdin: st.Stdin != nil, Stdout: st.Stdout != nil, Stderr: st.Stderr != nil, TTY: st.TTY}
	streams := monitor.AttachStreams{Stdin: st.Stdin, Stdout: st.Stdout, Stderr: st.Stderr, Resize: st.Resize}
	if err := s.calls.Attach(ctx, sb.snapshot().MonitorSocket, rec.ID, req, streams); err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	return nil
}
