package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// execProbe runs the probe's command (with $(VAR) expanded) in the container:
// exit code 0 succeeds, any other fails, and a command still running at the
// timeout fails with "timed out". The runtime enforces the timeout; ctx allows
// it one more unit to report before the agent stops waiting.
func execProbe(ctx context.Context, a *v1.ExecAction, t Target, ex Execer, timeout, unit time.Duration) outcome {
	if ex == nil {
		return unknown(errors.New("exec probe: no Execer"))
	}
	if t.ContainerID == "" {
		return unknown(errors.New("exec probe: no container ID"))
	}
	cmd := t.expandCommand(a.Command)
	execCtx, cancel := context.WithTimeout(ctx, timeout+unit)
	defer cancel()
	stdout, stderr, code, err := ex.ExecSync(execCtx, t.ContainerID, cmd, timeout)
	if err != nil {
		if timedOut(err) || (ctx.Err() == nil && execCtx.Err() != nil) {
			return failure(fmt.Sprintf("command %q timed out after %v", strings.Join(cmd, " "), timeout))
		}
		return unknown(fmt.Errorf("exec probe: %w", err))
	}
	out := combinedOutput(stdout, stderr)
	if code != 0 {
		return failure(out)
	}
	return success(out)
}

// timedOut recognises a runtime's report that a command hit its timeout.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// combinedOutput is stdout then stderr, at most maxOutput bytes.
func combinedOutput(stdout, stderr []byte) string {
	out := make([]byte, 0, min(len(stdout)+len(stderr), maxOutput))
	out = append(out, stdout[:min(len(stdout), maxOutput)]...)
	out = append(out, stderr[:min(len(stderr), maxOutput-len(out))]...)
	return string(out)
}
