package criserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/pod"
)

// Sandboxes is what the edge needs for pod sandbox RPCs.
type Sandboxes interface {
	RunSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error)
	StopSandbox(ctx context.Context, id string) error
	RemoveSandbox(ctx context.Context, id string) error
	UpdatePodSandboxResources(ctx context.Context, id string, overhead, resources *runtimeapi.LinuxContainerResources) error
	Sandbox(id string) (pod.Sandbox, error)
	Sandboxes() []pod.Sandbox
}

// Containers is what the edge needs for container RPCs.
type Containers interface {
	CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout int64) error
	RemoveContainer(ctx context.Context, id string) error
	ReopenContainerLog(ctx context.Context, id string) error
	UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error
	Container(id string) (pod.Container, error)
	Containers() []pod.Container
	ContainersUsingImage(imageID string) []string
}

// Images is what the edge needs of the image store.
type Images interface {
	Resolve(ref string) (image.Image, error)
	Pull(ctx context.Context, ref string, opts image.PullOptions) (image.Image, error)
	List() ([]image.Image, error)
	Remove(ref string) error
	Usage() (usedBytes, inodes uint64, err error)
	Root() string
}

// RPCObserver receives the duration and resulting gRPC code of each unary
// call (the daemon's metrics).
type RPCObserver interface {
	Observe(method string, code codes.Code, d time.Duration)
}

// HostResources says which cgroup controllers the host has and which
// resource settings were left out of specs for want of one (Status verbose
// info).
type HostResources interface {
	CgroupControllers() []string
	DroppedResources() []string
}

// ContainerFs measures the containers' writable layers, ImageFsInfo's
// container filesystem (pod.Service.WritableLayersUsage).
type ContainerFs interface {
	WritableLayersUsage() (pod.DiskUsage, error)
}

// Network reports CNI readiness and takes the pod CIDR.
type Network interface {
	Ready() error
	UpdatePodCIDR(cidr string) error
}

// Quarantine lists the records recovery set aside (pod.Service.Quarantined);
// Status reports them in its verbose info.
type Quarantine interface {
	Quarantined() []pod.QuarantinedRecord
}

// Config wires a Server.
type Config struct {
	Sandboxes  Sandboxes
	Containers Containers
	Images     Images
	Network    Network
	Version    string
	Logger     *slog.Logger
	// Stats samples usage and Events streams lifecycle events. When nil,
	// those RPCs answer Unimplemented.
	Stats  Stats
	Events Events

	// Exec runs ExecSync; Streaming answers Exec, Attach and PortForward.
	// When nil, those RPCs answer Unimplemented.
	Exec      Exec
	Streaming Streaming

	// RPCs, when set, observes every unary call.
	RPCs RPCObserver

	// Host, when set, is reported in Status verbose info.
	Host HostResources
	// OCIRuntime is the runc in use, reported in Status verbose info.
	OCIRuntime OCIRuntime
	// Handlers are the runtime handlers beside "" and "runc", by name.
	Handlers []Handler
	// ContainerFs, when set, is ImageFsInfo's container filesystem.
	ContainerFs ContainerFs
	// Quarantine, when set, lists the quarantined records in Status.
	Quarantine Quarantine

	// RecursiveReadOnlyMounts says the OCI runtime can make bind mounts
	// read-only recursively (runc's "rro"); Status advertises it.
	RecursiveReadOnlyMounts bool
	// UserNamespaces says the default handler's pods may run in user
	// namespaces (its runc and the host can idmap mounts).
	UserNamespaces bool

	// SystemdCgroup says berth runs with cgroup_driver = "systemd";
	// RuntimeConfig reports it, and kubelet follows.
	SystemdCgroup bool
}

// Server implements the CRI RuntimeService and ImageService.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	sandboxes  Sandboxes
	containers Containers
	images     Images
	network    Network
	stats      Stats
	events     Events
	exec       Exec
	streaming  Streaming
	rpcs       RPCObserver
	host       HostResources
	quarantine Quarantine
	layers     ContainerFs
	version    string
	rro        bool
	userns     bool
	systemd    bool
	ociRuntime OCIRuntime
	handlers   []Handler
	log        *slog.Logger
	ready      atomic.Bool
}

// New builds a Server; it answers Unavailable until SetReady.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{
		sandboxes: cfg.Sandboxes, containers: cfg.Containers, images: cfg.Images,
		network: cfg.Network, version: cfg.Version, log: cfg.Logger,
		stats: cfg.Stats, events: cfg.Events,
		exec: cfg.Exec, streaming: cfg.Streaming, rpcs: cfg.RPCs, rro: cfg.RecursiveReadOnlyMounts, userns: cfg.UserNamespaces,
		host: cfg.Host, quarantine: cfg.Quarantine, systemd: cfg.SystemdCgroup, layers: cfg.ContainerFs,
		ociRuntime: cfg.OCIRuntime, handlers: cfg.Handlers,
	}
}

// MaxMessageSize bounds a CRI request and a CRI answer, as containerd's
// server does (16 MiB; gRPC's default is 4 MiB) and the kubelet's client
// expects.
const MaxMessageSize = 16 << 20

// GRPCOptions are the options of the gRPC server the CRI services are
// registered on: the interceptors and the message limits.
func (s *Server) GRPCOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.UnaryInterceptor(s.UnaryInterceptor), grpc.StreamInterceptor(s.StreamInterceptor),
		grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize),
	}
}

// Register adds both CRI services to a gRPC server.
func (s *Server) Register(g *grpc.Server) {
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
}

// SetReady lets requests through; call it once recovery is done.
func (s *Server) SetReady() { s.ready.Store(true) }

// UnaryInterceptor is the one place for cross-cutting concerns: readiness,
// panics, logging with duration, latency observation, and error-class →
// gRPC code mapping.
func (s *Server) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in RPC", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "%s: internal error: %v", info.FullMethod, r)
		}
		if s.rpcs != nil {
			s.rpcs.Observe(info.FullMethod, status.Code(err), time.Since(start))
		}
	}()
	if !s.ready.Load() {
		return nil, status.Error(codes.Unavailable, "berth is recovering its state; retry shortly")
	}
	resp, err = handler(ctx, req)
	level := slog.LevelDebug
	if err != nil {
		err = toStatus(err)
		level = slog.LevelWarn
	}
	s.log.Log(ctx, level, "rpc", "method", info.FullMethod, "duration", time.Since(start), "error", err)
	return resp, err
}

// StreamInterceptor applies readiness to streaming RPCs.
func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !s.ready.Load() {
		return status.Error(codes.Unavailable, "berth is recovering its state; retry shortly")
	}
	if err := handler(srv, ss); err != nil {
		return toStatus(err)
	}
	return nil
}

// toStatus maps an error class to its gRPC code; an error that already is a
// status keeps its code.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, errdefs.ErrAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, errdefs.ErrInvalidArgument):
		code = codes.InvalidArgument
	case errors.Is(err, errdefs.ErrFailedPrecondition):
		code = codes.FailedPrecondition
	case errors.Is(err, errdefs.ErrUnavailable):
		code = codes.Unavailable
	case errors.Is(err, errdefs.ErrNotImplemented):
		code = codes.Unimplemented
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

func invalidArg(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}
