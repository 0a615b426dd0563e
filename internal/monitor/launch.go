package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// ReadyTimeout bounds how long Launch waits for a monitor to listen.
const ReadyTimeout = 10 * time.Second

// ReadyMessage is what a monitor writes on its ready pipe (fd 3) before
// closing it, once its socket is listening.
const ReadyMessage = "ready\n"

// LaunchOptions say how to start one pod's monitor.
type LaunchOptions struct {
	Binary   string // berth-monitor executable
	PodID    string
	Socket   string // unix socket the monitor listens on
	ExitDir  string // where it writes exit files
	RuncPath string // runc binary; the monitor's default when empty
	RuncRoot string // runc --root; runc's default when empty
	LogFile  string // the monitor's own diagnostics; discarded when empty
}

// Launch starts a detached monitor (its own session, stdio on /dev/null),
// waits until it listens, and returns its pid. The monitor outlives the
// caller; while the caller lives, a goroutine reaps the monitor when it
// exits.
func Launch(o LaunchOptions) (int, error) {
	if o.Binary == "" || o.PodID == "" || o.Socket == "" || o.ExitDir == "" {
		return 0, fmt.Errorf("monitor launch: binary, pod, socket and exit dir are required: %w", errdefs.ErrInvalidArgument)
	}
	what := "monitor of pod " + o.PodID
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("%s: ready pipe: %w", what, err)
	}
	defer readyR.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		readyW.Close()
		return 0, fmt.Errorf("%s: %s: %w", what, os.DevNull, err)
	}
	cmd := exec.Command(o.Binary, launchArgs(o)...)
	cmd.Env = monitorEnv(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	devNull.Close()
	if err != nil {
		return 0, fmt.Errorf("%s: start %s: %w", what, o.Binary, err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait() //nolint:errcheck // only reaps; the exit is seen by clients

	if err := awaitReady(readyR, ReadyTimeout); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL) // our own child
		return 0, fmt.Errorf("%s: pid %d: %w%s", what, pid, err, logTail(o.LogFile))
	}
	return pid, nil
}

// monitorEnv is the daemon's environment env without GOMAXPROCS: it
// tunes the daemon's Go runtime, and runc (a Go program the monitor
// starts) gets its own default.
func monitorEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			out = append(out, kv)
		}
	}
	return out
}

func launchArgs(o LaunchOptions) []string {
	args := []string{"--pod", o.PodID, "--socket", o.Socket, "--exit-dir", o.ExitDir}
	if o.RuncPath != "" {
		args = append(args, "--runc", o.RuncPath)
	}
	if o.RuncRoot != "" {
		args = append(args, "--runc-root", o.RuncRoot)
	}
	if o.LogFile != "" {
		args = append(args, "--log", o.LogFile)
	}
	return args
}

// awaitReady reads the ready pipe until the monitor closes it.
func awaitReady(r *os.File, timeout time.Duration) error {
	if err := r.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("ready pipe: deadline: %w", err)
	}
	got, err := io.ReadAll(io.LimitReader(r, 64))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("ready pipe: not ready after %s: %w", timeout, errdefs.ErrUnavailable)
	}
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	if string(got) != ReadyMessage {
		return fmt.Errorf("ready pipe: exited before listening: %w", errdefs.ErrUnavailable)
	}
	return nil
}

// logTail returns the end of the monitor's log, to explain a failed launch.
func logTail(path string) string {
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	if len(data) > 512 {
		data = data[len(data)-512:]
	}
	return ": log: " + string(bytes.TrimSpace(data))
}
