package criclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the part of the CRI RuntimeService the agent uses. The agent
// talks to the runtime through nothing else, so any CRI runtime will do.
type Runtime interface {
	// RunPodSandbox makes a sandbox with the runtime handler handler ("":
	// the runtime's default; a RuntimeClass's handler otherwise).
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, labels map[string]string) ([]*runtimeapi.PodSandbox, error)
	CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	ListContainers(ctx context.Context, labels map[string]string) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
	// ReopenContainerLog makes the runtime reopen a running container's
	// log file (after the agent renamed it: log rotation).
	ReopenContainerLog(ctx context.Context, id string) error
	// ContainerEvents subscribes to lifecycle events; the stream ends with
	// an error when the runtime drops the subscription.
	ContainerEvents(ctx context.Context) (EventStream, error)
}

// EventStream yields container lifecycle events.
type EventStream interface {
	Recv() (*runtimeapi.ContainerEventResponse, error)
}

// Images is the part of the CRI ImageService the agent uses.
type Images interface {
	// ImageStatus returns nil, nil when the runtime does not hold ref.
	ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error)
	// PullImage pulls ref with auth (nil: the runtime's own credentials,
	// or anonymous).
	PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error)
	// ListImages lists every image the runtime holds (image garbage
	// collection).
	ListImages(ctx context.Context) ([]*runtimeapi.Image, error)
	// RemoveImage removes an image by id or reference; an image already
	// gone is no error.
	RemoveImage(ctx context.Context, ref string) error
	// ImageFsInfo reports the filesystems of the images and of the
	// containers' writable layers.
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Stats is the part of the CRI the eviction manager measures with: the
// image filesystem (ImageService ImageFsInfo) and the containers' usage
// (RuntimeService ListContainerStats, filtered by labels).
type Stats interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	ListContainerStats(ctx context.Context, labels map[string]string) ([]*runtimeapi.ContainerStats, error)
}

// PullEvent is one progress report of an image pull, from a runtime that
// can tell (CRI PullImage itself reports nothing until it returns).
type PullEvent struct {
	Layer string // layer digest; "" for the whole image
	// State is waiting, downloading, unpacking, done, exists (the layer was
	// present already) or failed.
	State string
	Done  int64 // compressed bytes fetched so far
	Total int64 // compressed bytes in all; 0 = unknown
}

// PullWatcher is what an Images may also implement when its runtime
// reports pull progress: berth serve's in-process image store does; a
// client of another runtime's socket does not, and the agent then knows
// only when a pull started and ended.
type PullWatcher interface {
	// WatchPull calls fn with the progress of every pull of ref (as
	// PullImage is given it) until stop is called; fn must be cheap.
	WatchPull(ref string, fn func(PullEvent)) (stop func(), err error)
}

// callTimeout bounds every CRI call but the ones that wait on purpose
// (StopContainer waits for the grace period, PullImage for the registry),
// as kubelet's runtime request timeout does.
const callTimeout = 2 * time.Minute

// CRIClient is a Runtime and Images over one gRPC connection.
type CRIClient struct {
	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

// SocketPath turns a CRI endpoint ("unix:///run/berth/berth.sock" or a
// plain path) into the socket's path.
func SocketPath(endpoint string) (string, error) {
	path := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("runtime endpoint %q: only unix:// sockets are supported", endpoint)
		}
		path = rest
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("runtime endpoint %q: want an absolute socket path", endpoint)
	}
	return path, nil
}

// MaxCRIMessageSize bounds what the agent sends to and accepts from the
// runtime, as the kubelet's CRI client does (16 MiB; gRPC's default
// receive limit is 4 MiB).
const MaxCRIMessageSize = 16 << 20

// Dial connects to a CRI runtime's unix socket. The connection is lazy:
// calls fail until the runtime listens.
func Dial(endpoint string) (*CRIClient, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxCRIMessageSize), grpc.MaxCallSendMsgSize(MaxCRIMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("runtime endpoint %s: %w", endpoint, err)
	}
	return &CRIClient{conn: conn, runtime: runtimeapi.NewRuntimeServiceClient(conn), images: runtimeapi.NewImageServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *CRIClient) Close() error { return c.conn.Close() }

// RuntimeService is the raw client, for what the interfaces leave out
// (streaming Exec, Attach, PortForward; stats).
func (c *CRIClient) RuntimeService() runtimeapi.RuntimeServiceClient { return c.runtime }

// ImageService is the raw image client, for what Images leaves out
// (ImageFsInfo).
func (c *CRIClient) ImageService() runtimeapi.ImageServiceClient { return c.images }

// WaitReady waits until the runtime answers Version, or ctx ends, and
// returns the runtime's name ("berth", "containerd"): the scheme of the
// container IDs in pod statuses.
func (c *CRIClient) WaitReady(ctx context.Context) (string, error) {
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := c.runtime.Version(callCtx, &runtimeapi.VersionRequest{})
		cancel()
		if err == nil {
			return resp.GetRuntimeName(), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("runtime not ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Version is the runtime's CRI Version answer (name and version).
func (c *CRIClient) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return c.runtime.Version(ctx, &runtimeapi.VersionRequest{})
}

// SystemdCgroup asks the runtime's cgroup driver (CRI RuntimeConfig, as
// kubelet does): true for systemd. A runtime without RuntimeConfig
// (Unimplemented) uses cgroupfs.
func (c *CRIClient) SystemdCgroup(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if status.Code(err) == codes.Unimplemented {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runtime config: %w", err)
	}
	return resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD, nil
}

// HandlerFeatures are what the runtime's handlers (by name, "" the
// default) say they can do in CRI Status, as kubelet reads them.
type HandlerFeatures struct {
	// RecursiveReadOnly holds the handlers whose runc makes recursive
	// read-only mounts.
	RecursiveReadOnly map[string]bool
	// UserNamespaces holds every handler the runtime lists, true for
	// those that run pods in user namespaces (hostUsers: false); it is
	// empty for a runtime that lists none.
	UserNamespaces map[string]bool
}

// HandlerFeatures reads the runtime handlers' features from Status.
func (c *CRIClient) HandlerFeatures(ctx context.Context) (HandlerFeatures, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return HandlerFeatures{}, fmt.Errorf("runtime status: %w", err)
	}
	return handlerFeatures(resp.GetRuntimeHandlers()), nil
}

func handlerFeatures(handlers []*runtimeapi.RuntimeHandler) HandlerFeatures {
	out := HandlerFeatures{RecursiveReadOnly: map[string]bool{}, UserNamespaces: map[string]bool{}}
	for _, h := range handlers {
		if h.GetFeatures().GetRecursiveReadOnlyMounts() {
			out.RecursiveReadOnly[h.GetName()] = true
		}
		out.UserNamespaces[h.GetName()] = h.GetFeatures().GetUserNamespaces()
	}
	return out
}

// QuarantinedRecords counts the records the runtime set aside because it
// could not read them: berth lists them in its verbose Status under
// "quarantinedRecords"; a runtime that does not is taken to have none.
func (c *CRIClient) QuarantinedRecords(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("runtime status: %w", err)
	}
	info, ok := resp.GetInfo()["quarantinedRecords"]
	if !ok {
		return 0, nil
	}
	var recs []json.RawMessage
	if err := json.Unmarshal([]byte(info), &recs); err != nil {
		return 0, fmt.Errorf("runtime status: quarantinedRecords: %w", err)
	}
	return len(recs), nil
}

func (c *CRIClient) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: handler})
	return resp.GetPodSandboxId(), err
}

func (c *CRIClient) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *CRIClient) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *CRIClient) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	return resp.GetStatus(), err
}

func (c *CRIClient) ListPodSandbox(ctx context.Context, labels map[string]string) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: labels},
	})
	return resp.GetItems(), err
}

func (c *CRIClient) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: config, SandboxConfig: sandbox,
	})
	return resp.GetContainerId(), err
}

func (c *CRIClient) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// StopContainer asks the runtime to stop a container within grace (then
// SIGKILL); the call itself may take grace plus the usual call timeout.
func (c *CRIClient) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, grace+callTimeout)
	defer cancel()
	_, err := c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{
		ContainerId: id, Timeout: int64(grace.Round(time.Second) / time.Second),
	})
	return err
}

func (c *CRIClient) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return err
}

func (c *CRIClient) ListContainers(ctx context.Context, labels map[string]string) ([]*runtimeapi.Container, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: labels},
	})
	return resp.GetContainers(), err
}

func (c *CRIClient) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	return resp.GetStatus(), err
}

// ExecSync runs cmd in a container and waits up to timeout (0: no limit
// but the call timeout).
func (c *CRIClient) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+callTimeout)
	defer cancel()
	resp, err := c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: containerID, Cmd: cmd, Timeout: int64((timeout + time.Second - 1) / time.Second),
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}

func (c *CRIClient) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

// ContainerEvents subscribes to GetContainerEvents and returns once the
// runtime has sent the stream's headers (it subscribed), when it does so.
func (c *CRIClient) ContainerEvents(ctx context.Context) (EventStream, error) {
	stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return nil, err
	}
	if _, err := stream.Header(); err != nil {
		return nil, err
	}
	return stream, nil
}

func (c *CRIClient) ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if IsNotFound(err) {
		return nil, nil
	}
	return resp.GetImage(), err
}

// PullImage pulls ref; it is bounded only by ctx (a big image takes time).
func (c *CRIClient) PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth, SandboxConfig: sandbox,
	})
	return resp.GetImageRef(), err
}

func (c *CRIClient) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	return resp.GetImages(), err
}

func (c *CRIClient) RemoveImage(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if IsNotFound(err) {
		return nil
	}
	return err
}

func (c *CRIClient) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("ImageFsInfo: %w", err)
	}
	return resp, nil
}

// IsNotFound reports whether a CRI call failed because its object is gone.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code() == codes.NotFound
	}
	return false
}

// ListContainerStats returns the usage of the containers carrying labels.
func (c *CRIClient) ListContainerStats(ctx context.Context, labels map[string]string) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{LabelSelector: labels}})
	if err != nil {
		return nil, fmt.Errorf("ListContainerStats: %w", err)
	}
	return resp.GetStats(), nil
}
