package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// daemon is the `berth serve` this bench started; its client asks for
// the default runtime handler (the pinned runc).
type daemon struct {
	criClient
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	conn   *grpc.ClientConn
}

// startDaemon launches `berth serve` in its own process group (so a Ctrl-C
// on the terminal reaches only the bench, which then cleans up) and waits
// until it answers Version.
func startDaemon(ctx context.Context, e *env) (*daemon, error) {
	logFile, err := os.OpenFile(e.daemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(e.berthBin(), "serve", "--config", e.config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("berth serve: %w", err)
	}
	d := &daemon{criClient: criClient{e: e, endpoint: "unix://" + e.socket(), fsyncs: e.storeFsyncs}, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.exited) }()
	if err := d.connect(ctx); err != nil {
		d.stop()
		return nil, fmt.Errorf("berth serve: %w\n%s", err, logTail(e.daemonLog(), 30))
	}
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// connect dials the socket and polls Version until the daemon is ready.
func (d *daemon) connect(ctx context.Context) error {
	conn, err := grpc.NewClient(d.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", d.e.socket(), err)
	}
	d.conn, d.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !d.running() {
			return fmt.Errorf("exited before it was ready: %v", d.cmd.ProcessState)
		}
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := d.rt.Version(callCtx, &runtimeapi.VersionRequest{})
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after 30s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits up to 20s, then SIGKILL. Pods keep running.
func (d *daemon) stop() {
	if d.conn != nil {
		d.conn.Close()
		d.conn, d.rt = nil, nil
	}
	if !d.running() {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		warnf("berth serve pid %d: still running 20s after SIGTERM; sending SIGKILL", d.pid())
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.exited
	}
}

// removeAllPods stops and removes every sandbox the endpoint knows.
func (c criClient) removeAllPods(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("ListPodSandbox: %w", err)
	}
	var errs []error
	for _, sb := range resp.GetItems() {
		if err := c.removePod(ctx, sb.GetId()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removePod stops then removes one sandbox, as kubelet does.
func (c criClient) removePod(ctx context.Context, id string) error {
	if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("StopPodSandbox %s: %w", id, err)
	}
	if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	return nil
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- " + path + " (last lines) ---\n" + strings.Join(lines, "\n")
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: warning: "+format+"\n", args...)
}

func progressf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
