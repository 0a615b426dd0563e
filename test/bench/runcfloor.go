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

// runc runs one command of the system's runc (runcWith).
func (e *env) runc(ctx context.Context, args ...string) (time.Duration, error) {
	return e.runcWith(ctx, runcBinary, args...)
}

// runcWith runs one command of the runc binary bin with --root of the
// floors, stdio on /dev/null, in its own process group, and returns its
// wall time. Its stderr goes to a file, not a pipe: `runc create` hands its
// stdio to the container, which would hold a pipe open for its whole life.
func (e *env) runcWith(ctx context.Context, bin string, args ...string) (time.Duration, error) {
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
	cmd := exec.CommandContext(ctx, bin, append([]string{"--root", e.runcRoot()}, args...)...)
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
		t, err := e.runcCreateStart(ctx, runcBinary, sleepBundle, fmt.Sprintf("bb%s-sleep-%d", e.id, i))
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
// sleeps, which berth does not pay.) bin is the runc binary.
func (e *env) runcCreateStart(ctx context.Context, bin, bundle, id string) (t [3]time.Duration, err error) {
	if t[0], err = e.runcWith(ctx, bin, "create", "--bundle", bundle, id); err != nil {
		return t, fmt.Errorf("floor: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = e.runcWith(context.WithoutCancel(ctx), bin, "delete", "--force", id)
		}
	}()
	if t[1], err = e.runcWith(ctx, bin, "start", id); err != nil {
		return t, fmt.Errorf("floor: %w", err)
	}
	t[2], err = e.runcStopNow(ctx, bin, id)
	return t, err
}

// runcStopNow stops the running container id of runc bin (runcStop),
// untimed for its pid lookup.
func (e *env) runcStopNow(ctx context.Context, bin, id string) (time.Duration, error) {
	pid, err := e.runcPid(bin, id)
	if err != nil {
		_, _ = e.runcWith(context.WithoutCancel(ctx), bin, "delete", "--force", id)
		return 0, err
	}
	return e.runcStop(ctx, bin, id, pid)
}

// runcStop kills a container, waits until its init is gone and deletes it.
func (e *env) runcStop(ctx context.Context, bin, id string, pid int) (time.Duration, error) {
	start := time.Now()
	if _, err := e.runcWith(ctx, bin, "kill", id, "KILL"); err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("floor: container %s pid %d: alive 10s after SIGKILL", id, pid)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if _, err := e.runcWith(ctx, bin, "delete", id); err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	return time.Since(start), nil
}

// runcPid reads the container's init pid from `runc state` of runc bin.
func (e *env) runcPid(bin, id string) (int, error) {
	out, err := exec.Command(bin, "--root", e.runcRoot(), "state", id).Output()
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
// root, the system's runc's and the pinned one's (there are none unless a
// floor failed midway).
func (e *env) deleteRuncLeftovers() {
	for _, bin := range []string{runcBinary, e.pinnedRunc()} {
		out, err := exec.Command(bin, "--root", e.runcRoot(), "list", "--quiet").Output()
		if err != nil {
			continue // no runc root: nothing was created
		}
		for _, id := range strings.Fields(string(out)) {
			if _, err := e.runcWith(context.Background(), bin, "delete", "--force", id); err != nil {
				warnf("floor container %s: %v", id, err)
			}
		}
	}
}
