package runc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Runc runs the runc binary at Path with state under Root.
type Runc struct {
	Path string // runc binary; "runc" when empty
	Root string // --root; runc's default when empty
	// SystemdCgroup adds --systemd-cgroup: cgroupsPath is then
	// <slice>:<prefix>:<name> and systemd makes the container's scope.
	SystemdCgroup bool
}

// State is what runc reports about one container.
type State struct {
	ID      string    `json:"id"`
	Pid     int       `json:"pid"`
	Status  string    `json:"status"`
	Bundle  string    `json:"bundle"`
	Created time.Time `json:"created"`
}

// Kill sends sig to the container's init, or to all its processes when all.
func (r *Runc) Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error {
	args := []string{"kill"}
	if all {
		args = append(args, "--all")
	}
	args = append(args, id, strconv.Itoa(int(sig)))
	return r.run(ctx, "kill", id, args, nil)
}

// Delete runs "runc delete"; a container runc does not know is not an error.
func (r *Runc) Delete(ctx context.Context, id string, force bool) error {
	args := []string{"delete"}
	if force {
		args = append(args, "--force")
	}
	args = append(args, id)
	err := r.run(ctx, "delete", id, args, nil)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	return err
}

// State runs "runc state"; a container runc does not know is ErrNotFound.
func (r *Runc) State(ctx context.Context, id string) (*State, error) {
	out, err := r.output(ctx, "state", id, []string{"state", id})
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("runc state %s: output: %w", id, err)
	}
	return &s, nil
}

// List runs "runc list" and returns every container under Root.
func (r *Runc) List(ctx context.Context) ([]State, error) {
	out, err := r.output(ctx, "list", "", []string{"list", "--format", "json"})
	if err != nil {
		return nil, err
	}
	var states []State
	if err := json.Unmarshal(out, &states); err != nil {
		return nil, fmt.Errorf("runc list: output: %w", err)
	}
	return states, nil
}

// output runs a subcommand and returns what it printed on stdout.
func (r *Runc) output(ctx context.Context, sub, id string, args []string) ([]byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("runc %s: stdout pipe: %w", sub, err)
	}
	defer pr.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&out, pr) // a short read surfaces as bad JSON
	}()
	err = r.run(ctx, sub, id, args, func(cmd *exec.Cmd) { cmd.Stdout = pw })
	pw.Close()
	<-done
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// run executes runc with the global flags, a private JSON log, and args.
func (r *Runc) run(ctx context.Context, sub, id string, args []string, setup func(*exec.Cmd)) error {
	what := "runc " + sub
	if id != "" {
		what += " " + id
	}
	logFile, err := os.CreateTemp("", "runc-log-*.json")
	if err != nil {
		return fmt.Errorf("%s: log file: %w", what, err)
	}
	logPath := logFile.Name()
	logFile.Close()
	defer os.Remove(logPath)

	cmd := exec.Command(r.binary(), append(r.globalFlags(logPath), args...)...)
	if setup != nil {
		setup(cmd)
	}
	if err := r.exec(ctx, cmd); err != nil {
		return r.commandError(what, logPath, err)
	}
	return nil
}

// globalFlags are runc's options before the command: its JSON log, --root
// and --systemd-cgroup as configured.
func (r *Runc) globalFlags(logPath string) []string {
	global := []string{"--log", logPath, "--log-format", "json"}
	if r.Root != "" {
		global = append(global, "--root", r.Root)
	}
	if r.SystemdCgroup {
		global = append(global, "--systemd-cgroup")
	}
	return global
}

func (r *Runc) binary() string {
	if r.Path == "" {
		return "runc"
	}
	return r.Path
}

func (r *Runc) exec(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill() // it may have just exited
		<-waited               //nolint:errcheck // "signal: killed" says less than ctx.Err()
		return ctx.Err()
	}
}

// commandError names the subcommand and carries runc's last logged error.
func (r *Runc) commandError(what, logPath string, err error) error {
	msg := lastLogError(logPath)
	if msg == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	if strings.Contains(msg, "does not exist") {
		return fmt.Errorf("%s: %s: %w", what, msg, errdefs.ErrNotFound)
	}
	if strings.Contains(msg, "already exists") {
		return fmt.Errorf("%s: %s: %w", what, msg, errdefs.ErrAlreadyExists)
	}
	return fmt.Errorf("%s: %s", what, msg)
}

// lastLogError returns the message of the last error-level entry of a
// runc JSON log, or "" when there is none.
func lastLogError(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var lastErr string
	for _, line := range bytes.Split(data, []byte("\n")) {
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal(line, &entry) != nil || entry.Msg == "" {
			continue
		}
		if entry.Level == "error" || entry.Level == "fatal" {
			lastErr = entry.Msg
		}
	}
	return lastErr
}

// Features is what `runc features` says berth asks about.
type Features struct {
	// MountOptions are the mount options it accepts (e.g. "rro" for
	// recursive read-only bind mounts).
	MountOptions []string `json:"mountOptions"`
	Linux        struct {
		MountExtensions struct {
			IDMap struct {
				Enabled bool `json:"enabled"` // idmapped bind mounts (runc 1.2 and later)
			} `json:"idmap"`
		} `json:"mountExtensions"`
	} `json:"linux"`
}

// Features asks `runc features`.
func (r *Runc) Features(ctx context.Context) (*Features, error) {
	out, err := r.output(ctx, "features", "", []string{"features"})
	if err != nil {
		return nil, err
	}
	var features Features
	if err := json.Unmarshal(out, &features); err != nil {
		return nil, fmt.Errorf("runc features: %w", err)
	}
	return &features, nil
}

// Update applies new cgroup limits to a created or running container
// (`runc update --resources`); resources is an OCI LinuxResources as JSON.
func (r *Runc) Update(ctx context.Context, id string, resources []byte) error {
	f, err := os.CreateTemp("", "runc-update-*.json")
	if err != nil {
		return fmt.Errorf("runc update %s: %w", id, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(resources); err != nil {
		f.Close()
		return fmt.Errorf("runc update %s: %w", id, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("runc update %s: %w", id, err)
	}
	return r.run(ctx, "update", id, []string{"update", "--resources", f.Name(), id}, nil)
}
