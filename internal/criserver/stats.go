package criserver

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// Stats samples the resource usage of containers and sandboxes;
// SandboxMetrics in the detail CRI metrics need (processes, filesystems).
type Stats interface {
	ContainerStats(id string) (pod.ContainerStats, error)
	SandboxStats(id string) (pod.SandboxStats, error)
	SandboxMetrics(id string) (pod.SandboxStats, error)
}

func (s *Server) statsSource() (Stats, error) {
	if s.stats == nil {
		return nil, fmt.Errorf("stats: not configured: %w", errdefs.ErrNotImplemented)
	}
	return s.stats, nil
}

// ContainerStats returns the usage of one container; NotFound if unknown.
func (s *Server) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	st, err := src.ContainerStats(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: containerStatsCRI(&st)}, nil
}

// ListContainerStats returns the usage of the containers matching the filter
// (id prefix, sandbox id prefix, labels); containers removed meanwhile are
// left out.
func (s *Server) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	f := req.GetFilter()
	out := []*runtimeapi.ContainerStats{}
	for _, c := range s.containers.Containers() {
		if (f.GetId() != "" && !matchesID(c.ID, f.GetId())) ||
			(f.GetPodSandboxId() != "" && !matchesID(c.SandboxID, f.GetPodSandboxId())) ||
			!matchesLabels(c.Config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		st, err := src.ContainerStats(c.ID)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, containerStatsCRI(&st))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// PodSandboxStats returns the usage of one sandbox; NotFound if unknown.
func (s *Server) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	st, err := src.SandboxStats(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: sandboxStatsCRI(&st)}, nil
}

// ListPodSandboxStats returns the usage of the sandboxes matching the filter
// (id prefix, labels).
func (s *Server) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	src, err := s.statsSource()
	if err != nil {
		return nil, err
	}
	f := req.GetFilter()
	out := []*runtimeapi.PodSandboxStats{}
	for _, sb := range s.sandboxes.Sandboxes() {
		if (f.GetId() != "" && !matchesID(sb.ID, f.GetId())) || !matchesLabels(sb.Config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		st, err := src.SandboxStats(sb.ID)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sandboxStatsCRI(&st))
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}
