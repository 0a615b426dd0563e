package criclienttest

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is an in-memory CRI runtime. A container whose command is
// ["exit", "N"] exits with N as soon as it starts; any other runs until
// stopped (exit 137) or until the test calls Exit.
type Runtime struct {
	mu         sync.Mutex
	next       int
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*runtimeapi.Image // by reference (a tag, or the id)
	imageFs    *runtimeapi.ImageFsInfoResponse
	pullErr    error
	pullAuth   func(ref string, auth *runtimeapi.AuthConfig) error
	log        []string // "create <name>", "start <name>", "stop <name>", "reopen-log <name>", "runp", "stopp", "rmp"
	subs       []chan *runtimeapi.ContainerEventResponse
	eventsErr  error // set: every event stream breaks at once with it
	subscribes int   // ContainerEvents calls
	lists      int   // ListPodSandbox calls
	execResult func(id string, cmd []string) int32
	// quarantined is what QuarantinedRecords reports.
	quarantined int
	// stopHolds holds StopContainer of the containers of a name until the
	// channel is closed (HoldStop).
	stopHolds map[string]<-chan struct{}
	// clock stamps creations, starts, exits and events (SetClock); nil:
	// time.Now.
	clock func() time.Time
}

// QuarantinedRecords reports what SetQuarantined set, as berth's verbose
// Status does.
func (f *Runtime) QuarantinedRecords(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quarantined, nil
}

type sandbox struct {
	config  *runtimeapi.PodSandboxConfig
	handler string
	state   runtimeapi.PodSandboxState
	created time.Time
	ip      string
}

type container struct {
	id, sandbox string
	config      *runtimeapi.ContainerConfig
	state       runtimeapi.ContainerState
	created     time.Time
	started     time.Time
	finished    time.Time
	exitCode    int32
}

// New returns an empty runtime that holds the image "busybox".
func New() *Runtime {
	return &Runtime{
		sandboxes: map[string]*sandbox{}, containers: map[string]*container{},
		images: map[string]*runtimeapi.Image{"busybox": fakeImage("busybox")},
	}
}

// now is the time on the runtime's clock.
func (f *Runtime) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}

var errNotFound = status.Error(codes.NotFound, "not found")

func (f *Runtime) newID() string {
	f.next++
	return fmt.Sprintf("%064d", f.next)
}

func (f *Runtime) record(entry string) { f.log = append(f.log, entry) }

// publish sends an event to every subscriber (the caller holds f.mu).
func (f *Runtime) publish(id string, typ runtimeapi.ContainerEventType) {
	c := f.containers[id]
	var labels map[string]string
	if c != nil {
		labels = c.config.GetLabels()
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId: id, ContainerEventType: typ, CreatedAt: f.now().UnixNano(),
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{Labels: labels},
	}
	for _, s := range f.subs {
		select {
		case s <- ev:
		default:
		}
	}
}

// grpcDefaultMaxMessage is the message size gRPC refuses past unless told
// otherwise: the fake refuses configs that big, as a runtime would.
const grpcDefaultMaxMessage = 4 << 20

func (f *Runtime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if size := proto.Size(&runtimeapi.RunPodSandboxRequest{Config: cfg}); size > grpcDefaultMaxMessage {
		return "", status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", size, grpcDefaultMaxMessage)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.newID()
	f.sandboxes[id] = &sandbox{config: cfg, handler: handler, state: runtimeapi.PodSandboxState_SANDBOX_READY, created: f.now(), ip: "10.0.0." + strconv.Itoa(f.next%250+1)}
	f.record("runp " + cfg.GetMetadata().GetName())
	return id, nil
}

func (f *Runtime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return errNotFound
	}
	for cid, c := range f.containers {
		if c.sandbox == id && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
			f.exitLocked(cid, 137)
		}
	}
	sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	f.record("stopp " + sb.config.GetMetadata().GetName())
	return nil
}

func (f *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return nil
	}
	for cid, c := range f.containers {
		if c.sandbox == id {
			delete(f.containers, cid)
		}
	}
	delete(f.sandboxes, id)
	f.record("rmp " + sb.config.GetMetadata().GetName())
	return nil
}

func (f *Runtime) PodSandboxStatus(_ context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return nil, errNotFound
	}
	return &runtimeapi.PodSandboxStatus{
		Id: id, Metadata: sb.config.GetMetadata(), State: sb.state, CreatedAt: sb.created.UnixNano(),
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
		Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations(),
	}, nil
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *Runtime) ListPodSandbox(_ context.Context, selector map[string]string) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	var out []*runtimeapi.PodSandbox
	for id, sb := range f.sandboxes {
		if matches(sb.config.GetLabels(), selector) {
			out = append(out, &runtimeapi.PodSandbox{
				Id: id, Metadata: sb.config.GetMetadata(), State: sb.state, CreatedAt: sb.created.UnixNano(),
				Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations(),
			})
		}
	}
	return out, nil
}

func (f *Runtime) CreateContainer(_ context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[sandboxID]
	if sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", fmt.Errorf("sandbox %s not ready", sandboxID)
	}
	id := f.newID()
	f.containers[id] = &container{id: id, sandbox: sandboxID, config: cfg, state: runtimeapi.ContainerState_CONTAINER_CREATED, created: f.now()}
	f.record("create " + cfg.GetMetadata().GetName())
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return id, nil
}

func (f *Runtime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return errNotFound
	}
	c.state, c.started = runtimeapi.ContainerState_CONTAINER_RUNNING, f.now()
	f.record("start " + c.config.GetMetadata().GetName())
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	if cmd := c.config.GetCommand(); len(cmd) == 2 && cmd[0] == "exit" {
		code, _ := strconv.ParseInt(cmd[1], 10, 32)
		f.exitLocked(id, int32(code))
	}
	return nil
}

func (f *Runtime) exitLocked(id string, code int32) {
	c := f.containers[id]
	c.state, c.finished, c.exitCode = runtimeapi.ContainerState_CONTAINER_EXITED, f.now(), code
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// Exit makes the running instance of a container exit.
func (f *Runtime) Exit(name string, code int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.containers {
		if c.config.GetMetadata().GetName() == name && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			f.exitLocked(id, code)
			return nil
		}
	}
	return fmt.Errorf("no running container %q", name)
}

func (f *Runtime) StopContainer(ctx context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	c := f.containers[id]
	if c == nil {
		f.mu.Unlock()
		return errNotFound
	}
	f.record("stop " + c.config.GetMetadata().GetName())
	hold := f.stopHolds[c.config.GetMetadata().GetName()]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c = f.containers[id]; c == nil {
		return errNotFound
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		f.exitLocked(id, 137)
	}
	return nil
}

func (f *Runtime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
	return nil
}

func (f *Runtime) ListContainers(_ context.Context, selector map[string]string) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id, c := range f.containers {
		if matches(c.config.GetLabels(), selector) {
			out = append(out, &runtimeapi.Container{
				Id: id, PodSandboxId: c.sandbox, Metadata: c.config.GetMetadata(), State: c.state,
				CreatedAt: c.created.UnixNano(), Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
				Image: c.config.GetImage(), ImageRef: f.imageRefLocked(c),
			})
		}
	}
	return out, nil
}

func (f *Runtime) ContainerStatus(_ context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return nil, errNotFound
	}
	st := &runtimeapi.ContainerStatus{
		Id: id, Metadata: c.config.GetMetadata(), State: c.state, CreatedAt: c.created.UnixNano(),
		Labels: maps.Clone(c.config.GetLabels()), Annotations: maps.Clone(c.config.GetAnnotations()),
		LogPath: c.config.GetLogPath(), Image: c.config.GetImage(), ImageRef: f.imageRefLocked(c),
		Mounts: c.config.GetMounts(),
	}
	if !c.started.IsZero() {
		st.StartedAt = c.started.UnixNano()
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		st.FinishedAt, st.ExitCode = c.finished.UnixNano(), c.exitCode
		st.Reason = "Completed"
		if c.exitCode != 0 {
			st.Reason = "Error"
		}
	}
	return st, nil
}

// ReopenContainerLog records "reopen-log <name>"; a container that is
// not running cannot reopen its log.
func (f *Runtime) ReopenContainerLog(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return errNotFound
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.FailedPrecondition, "container %s is not running", id)
	}
	f.record("reopen-log " + c.config.GetMetadata().GetName())
	return nil
}

// imageRefLocked is the id of a container's image, "" once it is gone
// (the caller holds f.mu).
func (f *Runtime) imageRefLocked(c *container) string {
	if img := f.imageLocked(c.config.GetImage().GetImage()); img != nil {
		return img.GetId()
	}
	return ""
}

func (f *Runtime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	f.mu.Lock()
	run := f.execResult
	f.mu.Unlock()
	if run == nil {
		return nil, nil, 0, nil
	}
	return nil, nil, run(id, cmd), nil
}

type stream struct {
	ctx context.Context
	ch  chan *runtimeapi.ContainerEventResponse
}

func (s *stream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	select {
	case ev := <-s.ch:
		return ev, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

func (f *Runtime) ContainerEvents(ctx context.Context) (criclient.EventStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribes++
	if f.eventsErr != nil {
		return brokenStream{f.eventsErr}, nil
	}
	ch := make(chan *runtimeapi.ContainerEventResponse, 100)
	f.subs = append(f.subs, ch)
	return &stream{ctx: ctx, ch: ch}, nil
}

// Compile-time checks: the fake is what the agent needs.
var (
	_ criclient.Runtime = (*Runtime)(nil)
	_ criclient.Images  = (*Runtime)(nil)
)

// SandboxHandler is the runtime handler sandbox id was made with.
func (f *Runtime) SandboxHandler(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sb := f.sandboxes[id]; sb != nil {
		return sb.handler
	}
	return ""
}
