package criserver

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// Exec runs a command synchronously in a running container.
type Exec interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (pod.ExecResult, error)
}

// Streaming hands out the URLs of the streaming server.
type Streaming interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// ExecSync runs a command in a container and returns its output and exit
// code; its timeout kills the command's whole process tree.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if s.exec == nil {
		return nil, fmt.Errorf("exec sync: %w", errdefs.ErrNotImplemented)
	}
	if err := validateExecTarget(req.GetContainerId(), req.GetCmd()); err != nil {
		return nil, err
	}
	if req.GetTimeout() < 0 {
		return nil, invalidArg("timeout", "%d is negative", req.GetTimeout())
	}
	if _, err := s.containers.Container(req.GetContainerId()); err != nil {
		return nil, err
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	res, err := s.exec.ExecSync(ctx, req.GetContainerId(), req.GetCmd(), timeout)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// Exec prepares a streaming exec and returns its URL.
func (s *Server) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if s.streaming == nil {
		return nil, fmt.Errorf("exec: streaming server: %w", errdefs.ErrNotImplemented)
	}
	if err := validateExecTarget(req.GetContainerId(), req.GetCmd()); err != nil {
		return nil, err
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, invalidArg("stdin/stdout/stderr", "none requested")
	}
	if req.GetTty() && req.GetStderr() {
		return nil, invalidArg("stderr", "not available with tty")
	}
	if err := s.requireRunning(req.GetContainerId()); err != nil {
		return nil, err
	}
	return s.streaming.GetExec(req)
}

// Attach prepares a streaming attach and returns its URL.
func (s *Server) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if s.streaming == nil {
		return nil, fmt.Errorf("attach: streaming server: %w", errdefs.ErrNotImplemented)
	}
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	if err := s.requireRunning(req.GetContainerId()); err != nil {
		return nil, err
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, invalidArg("stdin/stdout/stderr", "none requested")
	}
	return s.streaming.GetAttach(req)
}

// PortForward prepares a port forward into a ready sandbox and returns its
// URL.
func (s *Server) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if s.streaming == nil {
		return nil, fmt.Errorf("port forward: streaming server: %w", errdefs.ErrNotImplemented)
	}
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	for _, p := range req.GetPort() {
		if p <= 0 || p > 65535 {
			return nil, invalidArg("port", "%d is out of range", p)
		}
	}
	sb, err := s.sandboxes.Sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if sb.State != pod.SandboxReady {
		return nil, fmt.Errorf("pod sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	return s.streaming.GetPortForward(req)
}

func validateExecTarget(id string, cmd []string) error {
	if id == "" {
		return invalidArg("container_id", "empty")
	}
	if len(cmd) == 0 || cmd[0] == "" {
		return invalidArg("cmd", "empty")
	}
	return nil
}

// requireRunning refuses unknown (NotFound) and not running
// (FailedPrecondition) containers before a stream is set up.
func (s *Server) requireRunning(id string) error {
	c, err := s.containers.Container(id)
	if err != nil {
		return err
	}
	if c.State != pod.ContainerRunning {
		return fmt.Errorf("container %s is %s, not running: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	return nil
}
