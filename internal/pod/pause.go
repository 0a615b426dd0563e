package pod

import (
	"context"
	"encoding/json"
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
	rootfs := filepath.Join(bundle, "rootfs")
	rb.add("remove pause bundle", func(context.Context) error { return os.RemoveAll(bundle) })
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return fmt.Errorf("pod sandbox %s: pause bundle: %w", rec.ID, err)
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
	if err := store.WriteFileAtomic(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		return fmt.Errorf("pod sandbox %s: pause spec: %w", rec.ID, err)
	}
	// Registered before the call: the monitor may finish runc create even
	// when this request gives up waiting for it.
	rb.add("delete berth-pause", func(ctx context.Context) error {
		return s.killAndDelete(ctx, s.runtimeFor(rec.RuntimeHandler), rec.ID, spec.Linux.CgroupsPath, true)
	})
	pid, err := s.calls.Create(ctx, rec.MonitorSocket, monitor.CreateRequest{
		ID: rec.ID, Bundle: bundle, CgroupPath: spec.Linux.CgroupsPath, SystemdCgroup: cgrouppath.IsSystemd(spec.Linux.CgroupsPath),
	})
	if err != nil {
		return fmt.Errorf("pod sandbox %s: berth-pause: runc create: %w", rec.ID, err)
	}
	if err := s.calls.Start(ctx, rec.MonitorSocket, rec.ID); err != nil {
		return fmt.Errorf("pod sandbox %s: berth-pause: runc start: %w", rec.ID, err)
	}
	rec.PausePid = pid
	return nil
}
