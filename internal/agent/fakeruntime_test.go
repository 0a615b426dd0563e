package agent

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// fakeRuntime is an in-memory CRI runtime. A container whose command is
// ["exit", "N"] exits with N as soon as it starts; any other runs until
// stopped (exit 137) or until the test calls exit.
type fakeRuntime struct {
	mu         sync.Mutex
	next       int
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer
	images     map[string]bool
	pullErr    error
	log        []string // "create <name>", "start <name>", "stop <name>", "runp", "stopp", "rmp"
	subs       []chan *runtimeapi.ContainerEventResponse
	eventsErr  error // set: every event stream breaks at once with it
	subscribes int   // ContainerEvents calls
	lists      int   // ListPodSandbox calls
	execResult func(id string, cmd []string) int32
	// quarantined is what QuarantinedRecords reports.
	quarantined int
}

func (f *fakeRuntime) QuarantinedRecords(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quarantined, nil
}

type fakeSandbox struct {
	config  *runtimeapi.PodSandboxConfig
	state   runtimeapi.PodSandboxState
	created time.Time
	ip      string
}

type fakeContainer struct {
	id, sandbox string
	config      *runtimeapi.ContainerConfig
	state       runtimeapi.ContainerState
	created     time.Time
	started     time.Time
	finished    time.Time
	exitCode    int32
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		sandboxes: map[string]*fakeSandbox{}, containers: map[string]*fakeContainer{},
		images: map[string]bool{"busybox": true},
	}
}

var errFakeNotFound = status.Error(codes.NotFound, "not found")

func (f *fakeRuntime) newID() string {
	f.next++
	return fmt.Sprintf("%064d", f.next)
}

func (f *fakeRuntime) record(entry string) { f.log = append(f.log, entry) }

// publish sends an event to every subscriber (the caller holds f.mu).
func (f *fakeRuntime) publish(id string, typ runtimeapi.ContainerEventType) {
	c := f.containers[id]
	var labels map[string]string
	if c != nil {
		labels = c.config.GetLabels()
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId: id, ContainerEventType: typ, CreatedAt: time.Now().UnixNano(),
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

func (f *fakeRuntime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	if size := proto.Size(&runtimeapi.RunPodSandboxRequest{Config: cfg}); size > grpcDefaultMaxMessage {
		return "", status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", size, grpcDefaultMaxMessage)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.newID()
	f.sandboxes[id] = &fakeSandbox{config: cfg, state: runtimeapi.PodSandboxState_SANDBOX_READY, created: time.Now(), ip: "10.0.0." + strconv.Itoa(f.next%250+1)}
	f.record("runp " + cfg.GetMetadata().GetName())
	return id, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return errFakeNotFound
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

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
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

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return nil, errFakeNotFound
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

func (f *fakeRuntime) ListPodSandbox(_ context.Context, selector map[string]string) ([]*runtimeapi.PodSandbox, error) {
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

func (f *fakeRuntime) CreateContainer(_ context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[sandboxID]
	if sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", fmt.Errorf("sandbox %s not ready", sandboxID)
	}
	id := f.newID()
	f.containers[id] = &fakeContainer{id: id, sandbox: sandboxID, config: cfg, state: runtimeapi.ContainerState_CONTAINER_CREATED, created: time.Now()}
	f.record("create " + cfg.GetMetadata().GetName())
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return id, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return errFakeNotFound
	}
	c.state, c.started = runtimeapi.ContainerState_CONTAINER_RUNNING, time.Now()
	f.record("start " + c.config.GetMetadata().GetName())
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	if cmd := c.config.GetCommand(); len(cmd) == 2 && cmd[0] == "exit" {
		code, _ := strconv.Atoi(cmd[1])
		f.exitLocked(id, int32(code))
	}
	return nil
}

func (f *fakeRuntime) exitLocked(id string, code int32) {
	c := f.containers[id]
	c.state, c.finished, c.exitCode = runtimeapi.ContainerState_CONTAINER_EXITED, time.Now(), code
	f.publish(id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// exit makes the running instance of a container exit.
func (f *fakeRuntime) exit(name string, code int32) error {
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

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return errFakeNotFound
	}
	f.record("stop " + c.config.GetMetadata().GetName())
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		f.exitLocked(id, 137)
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, selector map[string]string) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id, c := range f.containers {
		if matches(c.config.GetLabels(), selector) {
			out = append(out, &runtimeapi.Container{
				Id: id, PodSandboxId: c.sandbox, Metadata: c.config.GetMetadata(), State: c.state,
				CreatedAt: c.created.UnixNano(), Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
			})
		}
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return nil, errFakeNotFound
	}
	st := &runtimeapi.ContainerStatus{
		Id: id, Metadata: c.config.GetMetadata(), State: c.state, CreatedAt: c.created.UnixNano(),
		Labels: maps.Clone(c.config.GetLabels()), Annotations: maps.Clone(c.config.GetAnnotations()),
		LogPath: c.config.GetLogPath(), Image: c.config.GetImage(),
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

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	f.mu.Lock()
	run := f.execResult
	f.mu.Unlock()
	if run == nil {
		return nil, nil, 0, nil
	}
	return nil, nil, run(id, cmd), nil
}

type fakeStream struct {
	ctx context.Context
	ch  chan *runtimeapi.ContainerEventResponse
}

func (s *fakeStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	select {
	case ev := <-s.ch:
		return ev, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

func (f *fakeRuntime) ContainerEvents(ctx context.Context) (EventStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribes++
	if f.eventsErr != nil {
		return brokenStream{f.eventsErr}, nil
	}
	ch := make(chan *runtimeapi.ContainerEventResponse, 100)
	f.subs = append(f.subs, ch)
	return &fakeStream{ctx: ctx, ch: ch}, nil
}

func (f *fakeRuntime) ImageStatus(_ context.Context, ref string) (*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[ref] {
		return nil, nil
	}
	return &runtimeapi.Image{Id: "sha256:" + ref}, nil
}

func (f *fakeRuntime) PullImage(_ context.Context, ref string, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("pull " + ref)
	if f.pullErr != nil {
		return "", f.pullErr
	}
	f.images[ref] = true
	return "sha256:" + ref, nil
}

// calls returns the recorded calls so far.
func (f *fakeRuntime) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// live counts sandboxes and containers, and containers by name and state.
func (f *fakeRuntime) counts() (sandboxes, containers int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sandboxes), len(f.containers)
}

// fakeVolumes puts every volume in a directory of its own.
type fakeVolumes struct {
	root     string
	mu       sync.Mutex
	torndown []string
	sweeps   int                        // TeardownOrphans calls
	sources  map[string]podspec.Sources // by pod uid, as last set up
	// setupGate, when set, holds every Setup until it is closed.
	setupGate chan struct{}
}

func (v *fakeVolumes) Setup(ctx context.Context, pod *v1.Pod, sources podspec.Sources, _ podspec.Downward) (podspec.VolumePaths, error) {
	if v.setupGate != nil {
		select {
		case <-v.setupGate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	v.mu.Lock()
	if v.sources == nil {
		v.sources = map[string]podspec.Sources{}
	}
	v.sources[string(pod.UID)] = sources
	v.mu.Unlock()
	paths := podspec.VolumePaths{}
	for _, vol := range pod.Spec.Volumes {
		dir := filepath.Join(v.root, "pods", string(pod.UID), "volumes", vol.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		paths[vol.Name] = dir
	}
	return paths, nil
}

func (v *fakeVolumes) Teardown(uid string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.torndown = append(v.torndown, uid)
	return os.RemoveAll(filepath.Join(v.root, "pods", uid))
}

func (v *fakeVolumes) TeardownOrphans(map[string]bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sweeps++
	return nil
}

func (v *fakeVolumes) orphanSweeps() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sweeps
}

// MountSubPath joins by name: the fake runtime mounts nothing.
func (v *fakeVolumes) MountSubPath(req podspec.SubPathMount) (string, error) {
	return filepath.Join(req.VolumePath, req.SubPath), nil
}

// setUpWith returns the sources a pod's volumes were last set up with.
func (v *fakeVolumes) setUpWith(uid string) podspec.Sources {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sources[uid]
}

// brokenStream is an event stream that fails at its first Recv, as a gRPC
// stream does when the server answered with an error status only.
type brokenStream struct{ err error }

func (b brokenStream) Recv() (*runtimeapi.ContainerEventResponse, error) { return nil, b.err }

func (f *fakeRuntime) eventCalls() (subscribes, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subscribes, f.lists
}

// metadata is every label and annotation of every sandbox and container,
// by "sandbox <name>" or "container <name>".
func (f *fakeRuntime) metadata() map[string]map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]string{}
	for id, sb := range f.sandboxes {
		m := maps.Clone(sb.config.GetLabels())
		maps.Copy(m, sb.config.GetAnnotations())
		out["sandbox "+sb.config.GetMetadata().GetName()+" "+id[60:]] = m
	}
	for id, c := range f.containers {
		m := maps.Clone(c.config.GetLabels())
		maps.Copy(m, c.config.GetAnnotations())
		out["container "+c.config.GetMetadata().GetName()+" "+id[60:]] = m
	}
	return out
}
