package criserver

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
)

// RunPodSandbox creates and starts a pod sandbox.
func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	id, err := s.sandboxes.RunSandbox(ctx, req.GetConfig(), req.GetRuntimeHandler())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox is idempotent: unknown ids succeed.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	if err := s.sandboxes.StopSandbox(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox is idempotent: unknown ids succeed.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	if err := s.sandboxes.RemoveSandbox(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus returns NotFound for unknown sandboxes.
func (s *Server) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalidArg("pod_sandbox_id", "empty")
	}
	sb, err := s.sandboxes.Sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sandboxStatus(&sb)}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": sandboxInfo(&sb)}
	}
	return resp, nil
}

// ListPodSandbox lists sandboxes matching the filter (id or unique id
// prefix, state, labels: all must match).
func (s *Server) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	var items []*runtimeapi.PodSandbox
	for _, sb := range s.sandboxes.Sandboxes() {
		st := sandboxState(sb.State)
		if f != nil {
			if f.GetId() != "" && !matchesID(sb.ID, f.GetId()) {
				continue
			}
			if f.GetState() != nil && f.GetState().GetState() != st {
				continue
			}
			if !matchesLabels(sb.Config.GetLabels(), f.GetLabelSelector()) {
				continue
			}
		}
		items = append(items, &runtimeapi.PodSandbox{
			Id:             sb.ID,
			Metadata:       sb.Config.GetMetadata(),
			State:          st,
			CreatedAt:      sb.CreatedAt.UnixNano(),
			Labels:         sb.Config.GetLabels(),
			Annotations:    sb.Config.GetAnnotations(),
			RuntimeHandler: sb.RuntimeHandler,
		})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func sandboxState(st pod.SandboxState) runtimeapi.PodSandboxState {
	if st == pod.SandboxReady {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func sandboxStatus(sb *pod.Sandbox) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.ID,
		Metadata:       sb.Config.GetMetadata(),
		State:          sandboxState(sb.State),
		CreatedAt:      sb.CreatedAt.UnixNano(),
		Labels:         sb.Config.GetLabels(),
		Annotations:    sb.Config.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
	if len(sb.IPs) > 0 && sb.State == pod.SandboxReady {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IPs[0]}
		for _, ip := range sb.IPs[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return st
}

// sandboxInfo is the verbose status: berth's own view as JSON.
func sandboxInfo(sb *pod.Sandbox) string {
	info := map[string]any{
		"id": sb.ID, "name": sb.Name, "state": sb.State, "netns": sb.NetNS, "ipcns": sb.IPCNS, "utsns": sb.UTSNS,
		"ips": sb.IPs, "monitorPid": sb.MonitorPid, "pid": sb.PausePid, "hostNetwork": sb.HostNetwork,
		"hostnamePath": sb.HostnamePath, "hostsPath": sb.HostsPath, "resolvConfPath": sb.ResolvConfPath,
		"config": sb.Config,
	}
	b, _ := json.Marshal(info)
	return string(b)
}
