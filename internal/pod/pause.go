package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/oci"
	"github.com/berth-dev/berth/internal/store"
)

// startPause runs berth-pause as PID 1 of the pod's shared PID namespace. It
// is a runc container with the sandbox's id whose rootfs is an empty
// directory with the berth-pause binary bind-mounted in: no pause image.
func (s *Service) startPause(ctx context.Context, rec *Sandbox, rb *rollback) error {
	bundle := filepath.Join(s.bundlesDir(), rec.ID)
	rootfs := s.containerRootfs(rec, pauseRootfsName, bundle)
	rb.add("remove pause bundle", func(context.Context) error {
		return errors.Join(s.removePauseRootfs(rec), os.RemoveAll(bundle))
	})
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{bundle, store.PrivateDirMode}, {rootfs, 0o755}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("pod sandbox %s: pause bundle: %w", rec.ID, err)
		}
	}
	// runc mounts /proc and /dev there; made here, so that runc need not
	// write the rootfs (its init, in a pod's user namespace, may not).
	for _, d := range pauseMountPoints {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return fmt.Errorf("pod sandbox %s: pause bundle: %w", rec.ID, err)
		}
	}
	// An empty file as the mount point of the host's berth-pause binary.
	if err := os.WriteFile(filepath.Join(rootfs, oci.PauseBinary), nil, 0o755); err != nil {
		return fmt.Errorf("pod sandbox %s: pause bundle: %w", rec.ID, err)
	}
	spec, err := oci.BuildSandboxSpec(oci.SandboxInput{
		Sandbox:        ociSandbox(rec),
		RootfsPath:     rootfs,
		OOMScoreAdjMin: s.oomScoreAdjMin,
		SystemdCgroup:  s.cfg.SystemdCgroup,
		// A private cgroup namespace on cgroup v2-only hosts; v1 and
		// hybrid hosts keep the host's, as containerd and CRI-O do.
		CgroupNamespace: s.cfg.Controllers.Unified,
	})
	if err != nil {
		return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
	}
	s.fitResources(spec.Linux.Resources, "pod sandbox "+rec.ID)
	spec.Mounts = append(spec.Mounts, specs.Mount{
		Destination: oci.PauseBinary, Type: "bind", Source: s.cfg.PausePath,
		Options: []string{"rbind", "ro", "nosuid", "nodev"},
	})
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("pod sandbox %s: pause spec: %w", rec.ID, err)
	}
	// Under the state directory, which a reboot clears: atomic, not flushed.
	if err := store.WriteFileVolatile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		return fmt.Errorf("pod sandbox %s: pause spec: %w", rec.ID, err)
	}
	// Registered before the call: the monitor may finish runc run even
	// when this request gives up waiting for it.
	rb.add("delete berth-pause", func(ctx context.Context) error {
		return s.killAndDelete(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, spec.Linux.CgroupsPath, true)
	})
	pid, started, err := s.calls.Run(ctx, rec.MonitorSocket, monitor.CreateRequest{
		ID: rec.ID, Bundle: bundle, CgroupPath: spec.Linux.CgroupsPath, SystemdCgroup: cgrouppath.IsSystemd(spec.Linux.CgroupsPath),
	})
	if err != nil {
		return fmt.Errorf("pod sandbox %s: berth-pause: runc run: %w", rec.ID, err)
	}
	if !started { // a monitor that predates run
		if err := s.calls.Start(ctx, rec.MonitorSocket, rec.ID); err != nil {
			return fmt.Errorf("pod sandbox %s: berth-pause: runc start: %w", rec.ID, err)
		}
	}
	rec.PausePid = pid
	return nil
}

// pauseRootfsName names berth-pause's rootfs directory in a user-namespaced
// pod's directory (containerRootfs): no container id looks like it.
const pauseRootfsName = "pause"

// pauseMountPoints are the directories of berth-pause's rootfs.
var pauseMountPoints = []string{"proc", "dev"}

// removePauseRootfs removes berth-pause's rootfs directory of a pod in a
// user namespace (the one in its bundle goes with the bundle): the empty
// file there and the directory, nothing else.
func (s *Service) removePauseRootfs(rec *Sandbox) error {
	if sandboxUserns(rec.Config) == nil {
		return nil
	}
	return removePauseRootfsDir(filepath.Join(s.usernsDir(), rec.ID, pauseRootfsName))
}

// removePauseRootfsDir removes what startPause made in dir, and dir.
func removePauseRootfsDir(dir string) error {
	if err := os.Remove(filepath.Join(dir, oci.PauseBinary)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rootfs: %w", err)
	}
	for _, d := range pauseMountPoints {
		if err := removeEmptyDir(filepath.Join(dir, d)); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	return removeEmptyDir(dir)
}
