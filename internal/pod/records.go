package pod

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recordVersion is the version of the on-disk sandbox and container records.
// Bump it when a field changes meaning, and teach checkSandbox /
// checkContainer the old shape. 2: container configs are CRI v0.37's
// (env values as bytes, SIGNAL_-prefixed signals; migrateContainerConfigV1).
const recordVersion = 2

// SandboxState is the lifecycle state of a sandbox record.
type SandboxState string

// Sandbox states; see the diagram in doc.go.
const (
	SandboxCreating SandboxState = "creating"
	SandboxReady    SandboxState = "ready"
	SandboxNotReady SandboxState = "notready"
	SandboxRemoving SandboxState = "removing"
)

// Sandbox is the durable record of a pod sandbox.
type Sandbox struct {
	Version        int          `json:"version"`
	ID             string       `json:"id"`
	Name           string       `json:"name"` // the reserved name: name_namespace_uid_attempt
	State          SandboxState `json:"state"`
	CreatedAt      time.Time    `json:"createdAt"`
	RuntimeHandler string       `json:"runtimeHandler,omitempty"`
	HostNetwork    bool         `json:"hostNetwork,omitempty"`
	NetNS          string       `json:"netns,omitempty"`
	IPCNS          string       `json:"ipcns,omitempty"`
	UTSNS          string       `json:"utsns,omitempty"`
	UserNS         string       `json:"userns,omitempty"` // pinned when the config asks for user namespace mode POD
	IPs            []string     `json:"ips,omitempty"`
	NetworkDown    bool         `json:"networkDown,omitempty"` // CNI DEL succeeded: nothing to release`
	MonitorPid     int          `json:"monitorPid,omitempty"`
	MonitorSocket  string       `json:"monitorSocket"`
	PausePid       int          `json:"pausePid,omitempty"` // berth-pause, when the pod shares one PID namespace
	HostnamePath   string       `json:"hostnamePath,omitempty"`
	HostsPath      string       `json:"hostsPath,omitempty"`
	ResolvConfPath string       `json:"resolvConfPath,omitempty"`

	Config    *runtimeapi.PodSandboxConfig `json:"-"`
	RawConfig json.RawMessage              `json:"config"`
}

// ContainerState is the lifecycle state of a container record.
type ContainerState string

// Container states; see the diagram in doc.go.
const (
	ContainerCreating ContainerState = "creating"
	ContainerCreated  ContainerState = "created"
	ContainerRunning  ContainerState = "running"
	ContainerExited   ContainerState = "exited"
	ContainerRemoving ContainerState = "removing"
)

// Exit reasons reported in ContainerStatus.reason, as kubelet expects them.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
	ReasonUnknown   = "Unknown"
	// ReasonStartError: StartContainer could not run it (exit code 128).
	ReasonStartError = "StartError"
)

// Container is the durable record of a container. Pid is its init's
// from the moment runc made it: 0 in a created record means prepared.
type Container struct {
	Version    int            `json:"version"`
	ID         string         `json:"id"`
	Name       string         `json:"name"` // the reserved name: name_sandboxname_namespace_uid_attempt
	SandboxID  string         `json:"sandboxId"`
	State      ContainerState `json:"state"`
	CreatedAt  time.Time      `json:"createdAt"`
	StartedAt  time.Time      `json:"startedAt,omitzero"`
	FinishedAt time.Time      `json:"finishedAt,omitzero"`
	Pid        int            `json:"pid,omitempty"`
	ExitCode   int32          `json:"exitCode"`
	Reason     string         `json:"reason,omitempty"`
	Message    string         `json:"message,omitempty"`
	ImageID    string         `json:"imageId"`
	ImageName  string         `json:"imageName"`
	StopSignal string         `json:"stopSignal,omitempty"`
	LogPath    string         `json:"logPath,omitempty"` // absolute
	Bundle     string         `json:"bundle"`
	Rootfs     string         `json:"rootfs"`
	Dir        string         `json:"dir"` // holds upper/ and work/ of the overlay
	CgroupPath string         `json:"cgroupPath,omitempty"`
	UID        *int64         `json:"uid,omitempty"`
	GID        *int64         `json:"gid,omitempty"`
	Groups     []int64        `json:"groups,omitempty"` // supplemental groups of the process
	// RuntimeHandler is its sandbox's: the runc that created it ("" and
	// absent: the default).
	RuntimeHandler string `json:"runtimeHandler,omitempty"`
	// ImageVolumes are the images its image volumes mount (imagevolume.go).
	ImageVolumes []ImageVolume `json:"imageVolumes,omitempty"`

	Config    *runtimeapi.ContainerConfig `json:"-"`
	RawConfig json.RawMessage             `json:"config"`
}

// exitReason names why a container ended, from its exit code and OOM flag.
func exitReason(code int32, oomKilled bool) string {
	switch {
	case oomKilled:
		return ReasonOOMKilled
	case code == 0:
		return ReasonCompleted
	default:
		return ReasonError
	}
}

// encodeConfig stores a CRI message in a record as protobuf JSON.
func encodeConfig(m proto.Message) (json.RawMessage, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return b, nil
}

// decodeConfig reads a CRI message back from a record.
func decodeConfig(raw json.RawMessage, m proto.Message) error {
	if len(raw) == 0 {
		return fmt.Errorf("record holds no config")
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, m)
}

// clone returns a deep enough copy of a sandbox record for readers.
func (s Sandbox) clone() Sandbox {
	s.IPs = append([]string(nil), s.IPs...)
	return s
}

// prepared reports a created container that runc has not made yet:
// CreateContainer prepared its rootfs and bundle, and StartContainer runs
// it (`runc run --detach`). A record of a berth that ran `runc create` in
// CreateContainer has its init's pid.
func (c *Container) prepared() bool { return c.State == ContainerCreated && c.Pid == 0 }
