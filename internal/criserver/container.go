package criserver

import (
	"context"
	"encoding/json"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
)

// CreateContainer creates a container in a sandbox.
func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	id, err := s.containers.CreateContainer(ctx, req.GetPodSandboxId(), req.GetConfig(), req.GetSandboxConfig())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer starts a created container.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	if err := s.containers.StartContainer(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer is idempotent: unknown or stopped containers succeed.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	if req.GetTimeout() < 0 {
		return nil, invalidArg("timeout", "%d is negative", req.GetTimeout())
	}
	if err := s.containers.StopContainer(ctx, req.GetContainerId(), req.GetTimeout()); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer is idempotent: unknown containers succeed.
func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	if err := s.containers.RemoveContainer(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ReopenContainerLog asks the container's monitor to reopen its log file
// after kubelet rotated it; a container that is not running is refused
// (api.proto lets the runtime choose).
func (s *Server) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	if err := s.containers.ReopenContainerLog(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// UpdateContainerResources applies new Linux limits to a created or
// running container; Windows resources are InvalidArgument.
func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	switch {
	case req.GetContainerId() == "":
		return nil, invalidArg("container_id", "empty")
	case req.GetWindows() != nil:
		return nil, invalidArg("windows", "berth runs Linux containers only")
	case req.GetLinux() == nil:
		return nil, invalidArg("linux", "missing")
	}
	if err := s.containers.UpdateContainerResources(ctx, req.GetContainerId(), req.GetLinux()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// UpdatePodSandboxResources records the pod-level resources after a resize.
func (s *Server) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	if err := s.sandboxes.UpdatePodSandboxResources(ctx, req.GetPodSandboxId(), req.GetOverhead(), req.GetResources()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// CheckpointContainer is not supported: berth has no CRIU integration.
func (s *Server) CheckpointContainer(_ context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	return nil, status.Errorf(codes.Unimplemented,
		"CheckpointContainer %q: berth does not checkpoint containers (no CRIU support); nothing was written", req.GetContainerId())
}

// ContainerStatus returns NotFound for unknown containers.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalidArg("container_id", "empty")
	}
	c, err := s.containers.Container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: containerStatus(&c)}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": containerInfo(&c)}
	}
	return resp, nil
}

// ListContainers lists containers matching the filter (id prefix, state,
// sandbox id prefix, labels).
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	var out []*runtimeapi.Container
	for _, c := range s.containers.Containers() {
		st := containerState(c.State)
		if f != nil {
			if f.GetId() != "" && !matchesID(c.ID, f.GetId()) {
				continue
			}
			if f.GetPodSandboxId() != "" && !matchesID(c.SandboxID, f.GetPodSandboxId()) {
				continue
			}
			if f.GetState() != nil && f.GetState().GetState() != st {
				continue
			}
			if !matchesLabels(c.Config.GetLabels(), f.GetLabelSelector()) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.ID,
			PodSandboxId: c.SandboxID,
			Metadata:     c.Config.GetMetadata(),
			Image:        &runtimeapi.ImageSpec{Image: c.ImageName},
			ImageRef:     c.ImageID,
			ImageId:      c.ImageID,
			State:        st,
			CreatedAt:    c.CreatedAt.UnixNano(),
			Labels:       c.Config.GetLabels(),
			Annotations:  c.Config.GetAnnotations(),
		})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func containerState(st pod.ContainerState) runtimeapi.ContainerState {
	switch st {
	case pod.ContainerCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case pod.ContainerRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case pod.ContainerExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	default:
		return runtimeapi.ContainerState_CONTAINER_UNKNOWN
	}
}

func containerStatus(c *pod.Container) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    c.Config.GetMetadata(),
		State:       containerState(c.State),
		CreatedAt:   c.CreatedAt.UnixNano(),
		Image:       &runtimeapi.ImageSpec{Image: c.ImageName},
		ImageRef:    c.ImageID,
		ImageId:     c.ImageID,
		Labels:      c.Config.GetLabels(),
		Annotations: c.Config.GetAnnotations(),
		Mounts:      statusMounts(c),
		LogPath:     c.LogPath,
		StopSignal:  c.Config.GetStopSignal(),
	}
	if !c.StartedAt.IsZero() {
		st.StartedAt = c.StartedAt.UnixNano()
	}
	if c.State == pod.ContainerExited {
		st.FinishedAt = c.FinishedAt.UnixNano()
		st.ExitCode = c.ExitCode
		st.Reason = c.Reason
		st.Message = c.Message
	}
	if c.UID != nil {
		lu := &runtimeapi.LinuxContainerUser{Uid: *c.UID}
		if c.GID != nil {
			lu.Gid = *c.GID
		}
		lu.SupplementalGroups = c.Groups
		st.User = &runtimeapi.ContainerUser{Linux: lu}
	}
	if r := c.Config.GetLinux().GetResources(); r != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: r}
	}
	return st
}

// containerInfo is the verbose status: berth's own view as JSON. Env
// values are redacted from the config (containerd echoes them in the OCI
// spec; berth does not): they may come from Secrets, and the status is no
// place to read them back.
func containerInfo(c *pod.Container) string {
	info := map[string]any{
		"id": c.ID, "sandboxID": c.SandboxID, "pid": c.Pid, "state": c.State, "bundle": c.Bundle,
		"rootfs": c.Rootfs, "cgroupPath": c.CgroupPath, "logPath": c.LogPath, "config": redactedConfig(c.Config),
	}
	b, _ := json.Marshal(info)
	return string(b)
}

// redactedEnvValue stands for every env value in a verbose status.
const redactedEnvValue = "<redacted>"

// redactedConfig is a copy of a container config with every env value
// replaced by redactedEnvValue (the names stay).
func redactedConfig(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	if cfg == nil {
		return nil
	}
	out := proto.Clone(cfg).(*runtimeapi.ContainerConfig)
	for _, env := range out.GetEnvs() {
		if env != nil {
			env.Value = []byte(redactedEnvValue)
		}
	}
	return out
}

// statusMounts are the container's mounts as asked, each image volume's
// with the id of the image it mounts as image.image_ref (KEP-5365), as a
// container's image_ref.
func statusMounts(c *pod.Container) []*runtimeapi.Mount {
	mounts := c.Config.GetMounts()
	if len(c.ImageVolumes) == 0 {
		return mounts
	}
	out := slices.Clone(mounts)
	for _, v := range c.ImageVolumes {
		if v.Mount < 0 || v.Mount >= len(out) || out[v.Mount].GetImage() == nil {
			continue
		}
		m := proto.CloneOf(out[v.Mount])
		m.Image.ImageRef = v.ImageID
		out[v.Mount] = m
	}
	return out
}
