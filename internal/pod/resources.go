package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/oci"
	"github.com/berth-dev/berth/internal/store"
)

// UpdateContainerResources applies new limits to a created or running
// container through `runc update` (to the bundle's spec of a prepared one,
// which runc has not run yet) and records them, so that
// ContainerStatus reports what is in force. The limits change first: a
// crash between the two leaves the record with the old values, which the
// next update (kubelet retries until the status matches) corrects.
func (s *Service) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error {
	spec, err := oci.UpdateResources(res)
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	s.fitResources(spec, "container "+id)
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("container %s: resources: %w", id, err)
	}
	e, err := s.findContainer(id)
	if err != nil {
		return err
	}
	e.op.Lock()
	defer e.op.Unlock()
	s.refreshExit(e)
	rec := e.snapshot()
	if rec.State != ContainerCreated && rec.State != ContainerRunning {
		return fmt.Errorf("container %s is %s, not created or running: %w", rec.ID, rec.State, errdefs.ErrFailedPrecondition)
	}
	if rec.prepared() {
		err = updateBundleResources(rec.Bundle, spec)
	} else {
		err = s.runtimeFor(rec.RuntimeHandler).Update(ctx, rec.ID, data)
	}
	if err != nil {
		return fmt.Errorf("container %s: update resources: %w", rec.ID, err)
	}
	return s.updateContainer(e, func(c *Container) bool {
		cfg := proto.Clone(c.Config).(*runtimeapi.ContainerConfig)
		if cfg.Linux == nil {
			cfg.Linux = &runtimeapi.LinuxContainerConfig{}
		}
		cfg.Linux.Resources = proto.Clone(res).(*runtimeapi.LinuxContainerResources)
		c.Config = cfg
		return true
	})
}

// UpdatePodSandboxResources records the pod-level resources kubelet
// reports after an in-place resize. The pod's cgroup belongs to kubelet
// (cgroup_parent), which resizes it itself; berth keeps the values for
// PodSandboxStatus and answers NotFound for an unknown sandbox.
func (s *Service) UpdatePodSandboxResources(ctx context.Context, id string, overhead, resources *runtimeapi.LinuxContainerResources) error {
	for name, r := range map[string]*runtimeapi.LinuxContainerResources{"overhead": overhead, "resources": resources} {
		if r == nil {
			continue
		}
		if _, err := oci.UpdateResources(r); err != nil {
			return fmt.Errorf("pod sandbox %s: %s: %w", id, name, err)
		}
	}
	e, err := s.findSandbox(id)
	if err != nil {
		return err
	}
	return s.updateSandbox(e, func(sb *Sandbox) bool {
		cfg := proto.Clone(sb.Config).(*runtimeapi.PodSandboxConfig)
		if cfg.Linux == nil {
			cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{}
		}
		if overhead != nil {
			cfg.Linux.Overhead = proto.Clone(overhead).(*runtimeapi.LinuxContainerResources)
		}
		if resources != nil {
			cfg.Linux.Resources = proto.Clone(resources).(*runtimeapi.LinuxContainerResources)
		}
		sb.Config = cfg
		return true
	})
}

// updateBundleResources merges upd into the resources of the spec in
// bundle, which runc will run.
func updateBundleResources(bundle string, upd *specs.LinuxResources) error {
	spec, err := readBundleSpec(bundle)
	if err != nil {
		return err
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	if spec.Linux.Resources == nil {
		spec.Linux.Resources = &specs.LinuxResources{}
	}
	oci.MergeResources(spec.Linux.Resources, upd)
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("bundle config.json: %w", err)
	}
	return store.WriteFileVolatile(filepath.Join(bundle, "config.json"), data, 0o600)
}

// readBundleSpec reads the OCI spec of a bundle berth wrote (writeSpec).
func readBundleSpec(bundle string) (*specs.Spec, error) {
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	return &spec, nil
}
