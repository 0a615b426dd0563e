package criserver

import (
	"context"
	"encoding/json"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
)

// RuntimeName is what Version reports.
const RuntimeName = "berth"

// Version reports berth's name and version and the CRI version it serves.
func (s *Server) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       RuntimeName,
		RuntimeVersion:    s.version,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports RuntimeReady (always, once recovery is done) and
// NetworkReady with CNI's exact reason when it is not. Its verbose info
// lists the quarantined records under "quarantinedRecords".
func (s *Server) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	netCond := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if err := s.network.Ready(); err != nil {
		netCond.Status = false
		netCond.Reason = "NetworkPluginNotReady"
		netCond.Message = "cni: " + err.Error()
	}
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		netCond,
	}}}
	resp.RuntimeHandlers = []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: s.rro, UserNamespaces: s.userns}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: s.rro, UserNamespaces: s.userns}},
	}
	for _, h := range s.handlers {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name: h.Name, Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: h.RecursiveReadOnlyMounts, UserNamespaces: h.UserNamespaces}})
	}
	resp.Features = &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true, MountOptions: true} // mount_options: nosuid, nodev, noexec (oci)
	if req.GetVerbose() {
		resp.Info = map[string]string{
			"runtime":            s.runtimeInfo(),
			"quarantinedRecords": s.quarantinedInfo(),
		}
	}
	return resp, nil
}

// OCIRuntime is the runc berth runs, as Status verbose info names it.
type OCIRuntime struct {
	Path    string `json:"path"`              // the executable, resolved
	Version string `json:"version,omitempty"` // what `runc --version` says; "" when it said nothing
}

// Handler is a runtime handler beside the default "" and "runc": its
// name, what its runc supports (Status RuntimeHandlers) and which runc it
// is (verbose info).
type Handler struct {
	Name                    string
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool // pods may run in user namespaces (CRI UserNamespace mode POD)
	OCIRuntime              OCIRuntime
}

// runtimeInfo is the "runtime" entry of Status verbose info.
func (s *Server) runtimeInfo() string {
	info := struct {
		Name              string   `json:"name"`
		OCIRuntime        string   `json:"ociRuntime"`
		OCIRuntimePath    string   `json:"ociRuntimePath,omitempty"`
		OCIRuntimeVersion string   `json:"ociRuntimeVersion,omitempty"`
		CgroupDriver      string   `json:"cgroupDriver"`
		CgroupControllers []string `json:"cgroupControllers,omitempty"`
		// DroppedResources are settings left out of specs since the start:
		// the host has no controller for them.
		DroppedResources []string `json:"droppedResources,omitempty"`
		// Handlers are the other runtime handlers' runcs.
		Handlers map[string]OCIRuntime `json:"runtimeHandlers,omitempty"`
	}{Name: RuntimeName, OCIRuntime: "runc", OCIRuntimePath: s.ociRuntime.Path, OCIRuntimeVersion: s.ociRuntime.Version, CgroupDriver: "cgroupfs"}
	if s.systemd {
		info.CgroupDriver = "systemd"
	}
	for _, h := range s.handlers {
		if info.Handlers == nil {
			info.Handlers = map[string]OCIRuntime{}
		}
		info.Handlers[h.Name] = h.OCIRuntime
	}
	if s.host != nil {
		info.CgroupControllers, info.DroppedResources = s.host.CgroupControllers(), s.host.DroppedResources()
	}
	data, err := json.Marshal(info)
	if err != nil { // cannot happen: strings only
		return "{}"
	}
	return string(data)
}

// quarantinedInfo is the JSON list of the records recovery set aside: a
// person's to repair or remove (docs/architecture.md, "Crash safety and
// recovery").
func (s *Server) quarantinedInfo() string {
	recs := []pod.QuarantinedRecord{}
	if s.quarantine != nil {
		recs = append(recs, s.quarantine.Quarantined()...)
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// RuntimeConfig reports the cgroup driver berth uses (cgroup_driver);
// kubelet (1.34 and 1.37 tested) takes its own from it.
func (s *Server) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	driver := runtimeapi.CgroupDriver_CGROUPFS
	if s.systemd {
		driver = runtimeapi.CgroupDriver_SYSTEMD
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: driver}}, nil
}

// UpdateRuntimeConfig takes the pod CIDR kubelet assigns to this node; an
// empty CIDR is ignored, as api.proto allows.
func (s *Server) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	if cidr == "" {
		return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
	}
	if err := s.network.UpdatePodCIDR(cidr); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
