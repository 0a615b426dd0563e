package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// runcBinary is the runc berth uses on this machine.
const runcBinary = "runc"

// runc runs one runc command with --root of the floors, stdio on /dev/null,
// in its own process group, and returns its wall time. Its stderr goes to a
// file, not a pipe: `runc create` hands its stdio to the container, which
// would hold a pipe open for its whole life.
func (e *env) runc(ctx context.Context, args ...string) (time.Duration, error) {
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer devNull.Close()
	stderr, err := os.CreateTemp(e.floors, "runc-stderr-")
	if err != nil {
		return 0, fmt.Errorf("runc stderr file: %w", err)
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runcBinary, append([]string{"--root", e.runcRoot()}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if err != nil {
		msg, _ := os.ReadFile(stderr.Name())
		return took, fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(msg)))
	}
	return took, nil
}

// writeBundle writes a bundle whose config.json is `runc spec`'s minimal
// spec, with the image layer as a read-only rootfs and args as the process.
func (e *env) writeBundle(name, rootfs string, args ...string) (string, error) {
	bundle := filepath.Join(e.floors, "bundles", name)
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return "", fmt.Errorf("floor bundle %s: %w", bundle, err)
	}
	if out, err := exec.Command(runcBinary, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		return "", fmt.Errorf("floor bundle %s: runc spec: %w: %s", bundle, err, out)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("floor bundle %s: %w", bundle, err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return "", fmt.Errorf("floor bundle %s: runc spec output: %w", bundle, err)
	}
	spec.Root = &specs.Root{Path: rootfs, Readonly: true}
	spec.Process.Args = args
	spec.Process.Terminal = false
	spec.Hostname = "floor"
	if data, err = json.Marshal(&spec); err != nil {
		return "", fmt.Errorf("floor bundle %s: %w", bundle, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("floor bundle %s: %w", bundle, err)
	}
	return bundle, nil
}

// measureRuncFloors times `runc run` of true, then `runc create` + `runc
// start` of sleep (deleted untimed with `runc delete -f`), each n times
// after one discarded warm-up.
func (e *env) measureRuncFloors(ctx context.Context, n int, f *floors) error {
	rootfs, err := e.layerDir()
	if err != nil {
		return err
	}
	trueBundle, err := e.writeBundle("true", rootfs, "true")
	if err != nil {
		return err
	}
	sleepBundle, err := e.writeBundle("sleep", rootfs, "sleep", "3600")
	if err != nil {
		return err
	}
	for i := 0; i <= n; i++ {
		took, err := e.runc(ctx, "run", "--bundle", trueBundle, fmt.Sprintf("bb%s-true-%d", e.id, i))
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		if i > 0 {
			f.runcRun = append(f.runcRun, took)
		}
	}
	for i := 0; i <= n; i++ {
		t, err := e.runcCreateStart(ctx, sleepBundle, fmt.Sprintf("bb%s-sleep-%d", e.id, i))
		if err != nil {
			return err
		}
		if i > 0 {
			f.runcCreate = append(f.runcCreate, t[0])
			f.runcStart = append(f.runcStart, t[1])
			f.runcDelete = append(f.runcDelete, t[2])
		}
	}
	f.runcCreStart = sumPairs(f.runcCreate, f.runcStart)
	return nil
}

// runcCreateStart returns the times of `runc create`, `runc start` and the
// stop of the running container: `runc kill KILL`, waiting for its pid to
// go, `runc delete`. (`runc delete --force` would add runc's own polling
// sleeps, which berth does not pay.)
func (e *env) runcCreateStart(ctx context.Context, bundle, id string) (t [3]time.Duration, err error) {
	if t[0], err = e.runc(ctx, "create", "--bundle", bundle, id); err != nil {
		return t, fmt.Errorf("floor: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = e.runc(context.WithoutCancel(ctx), "delete", "--force", id)
		}
	}()
	if t[1], err = e.runc(ctx, "start", id); err != nil {
		return t, fmt.Errorf("floor: %w", err)
	}
	pid, err := e.runcPid(id)
	if err != nil {
		return t, err
	}
	t[2], err = e.runcStop(ctx, id, pid)
	return t, err
}

// runcStop kills a container, waits until its init is gone and deletes it.
func (e *env) runcStop(ctx context.Context, id string, pid int) (time.Duration, error) {
	start := time.Now()
	if _, err := e.runc(ctx, "kill", id, "KILL"); err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("floor: container %s pid %d: alive 10s after SIGKILL", id, pid)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if _, err := e.runc(ctx, "delete", id); err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	return time.Since(start), nil
}

// runcPid reads the container's init pid from `runc state`.
func (e *env) runcPid(id string) (int, error) {
	out, err := exec.Command(runcBinary, "--root", e.runcRoot(), "state", id).Output()
	if err != nil {
		return 0, fmt.Errorf("floor: runc state %s: %w", id, err)
	}
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Pid <= 0 {
		return 0, fmt.Errorf("floor: runc state %s: no pid (%v)", id, err)
	}
	return st.Pid, nil
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z"
}

// deleteRuncLeftovers force-deletes every container under the floors' runc
// root (there are none unless a floor failed midway).
func (e *env) deleteRuncLeftovers() {
	out, err := exec.Command(runcBinary, "--root", e.runcRoot(), "list", "--quiet").Output()
	if err != nil {
		return // no runc root: nothing was created
	}
	for _, id := range strings.Fields(string(out)) {
		if _, err := e.runc(context.Background(), "delete", "--force", id); err != nil {
			warnf("floor container %s: %v", id, err)
		}
	}
}
