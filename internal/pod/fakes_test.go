package pod

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/runc"
)

// fakeWorld stands in for runc, the pod monitors, the host and CNI: it
// implements containerRuntime, podMonitors, monitorCalls, podHost and
// Network, records every call as "<op> <first 8 chars of the object id>",
// and fails the ops named in fail. Nothing it does needs root: a pin is a
// plain file, a rootfs mount a plain directory.
type fakeWorld struct {
	mu    sync.Mutex
	calls []string
	// fail makes an op return its error.
	fail map[string]error
	// hook runs before an op with the object id.
	hook map[string]func(id string)
	// states are what runc state says, by container id; others are not found.
	states map[string]runc.State
	// pinned are the namespace files that are live.
	pinned map[string]bool
	// teardowns are the attachments CNI DEL got.
	teardowns []network.Attachment
	// cgroupRoot stands in for /sys/fs/cgroup.
	cgroupRoot string
	// launches are the monitors launched.
	launches []monitor.LaunchOptions
	// died are the watched monitors' death callbacks, by socket id.
	died map[string]func()
	// gone are the monitors, by pid, that are no longer there.
	gone map[int]bool
	// oldMonitor makes Run answer as a monitor that predates it: created,
	// not started.
	oldMonitor bool
}

func newFakeWorld() *fakeWorld {
	return &fakeWorld{fail: map[string]error{}, hook: map[string]func(string){},
		states: map[string]runc.State{}, pinned: map[string]bool{}, died: map[string]func(){}, gone: map[int]bool{}}
}

// Fake pids: no real process is ever signalled through them.
const (
	fakeMonitorPid = 1<<22 + 1
	fakeInitPid    = 1<<22 + 2
)

// use wires f into s in place of the real implementations.
func (f *fakeWorld) use(s *Service) {
	s.runtime, s.monitors, s.calls, s.host, s.cfg.Network = f, f, f, f, f
}

// call records op on the object id, runs its hook and returns its failure.
func (f *fakeWorld) call(op, id string) error {
	f.mu.Lock()
	f.calls = append(f.calls, op+" "+short(id))
	hook, err := f.hook[op], f.fail[op]
	f.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	return err
}

// log returns the calls so far; with ops only, without the object ids.
func (f *fakeWorld) log(opsOnly bool) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.calls)
	if opsOnly {
		for i, c := range out {
			out[i], _, _ = strings.Cut(c, " ")
		}
	}
	return out
}

func short(id string) string { return id[:min(8, len(id))] }

// socketID is the id part of a monitor socket path.
func socketID(socket string) string { return strings.TrimSuffix(filepath.Base(socket), ".sock") }

// dirID is the object id of <dir>/<id>/<name>.
func dirID(path string) string { return filepath.Base(filepath.Dir(path)) }

func (f *fakeWorld) State(_ context.Context, id string) (*runc.State, error) {
	if err := f.call("state", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[id]
	if !ok {
		return nil, fmt.Errorf("runc state %s: container does not exist: %w", id, errdefs.ErrNotFound)
	}
	return &st, nil
}

func (f *fakeWorld) Kill(_ context.Context, id string, _ syscall.Signal, _ bool) error {
	return f.call("kill", id)
}

func (f *fakeWorld) Delete(_ context.Context, id string, _ bool) error {
	if err := f.call("delete", id); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.states, id)
	f.mu.Unlock()
	return nil
}

func (f *fakeWorld) Update(_ context.Context, id string, _ []byte) error { return f.call("update", id) }

func (f *fakeWorld) StartExec(id string, _ runc.ExecOpts) (*runc.Execution, error) {
	return nil, errors.Join(f.call("exec", id), errors.New("fake runtime: no exec"))
}

// Launch gives the first monitor fakeMonitorPid, each later one the next
// pid.
func (f *fakeWorld) Launch(o monitor.LaunchOptions) (int, error) {
	f.mu.Lock()
	f.launches = append(f.launches, o)
	pid := fakeMonitorPid + len(f.launches) - 1
	f.mu.Unlock()
	return pid, f.call("launch", o.PodID)
}

// Watch keeps died, for killMonitor; it records no call. A monitor in
// gone is not found.
func (f *fakeWorld) Watch(pid int, socket string, died func()) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[pid] {
		return nil, errdefs.ErrNotFound
	}
	f.died[socketID(socket)] = died
	return func() {}, nil
}

// Alive says a monitor lives unless it is in gone; it records no call.
func (f *fakeWorld) Alive(pid int, _ string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.gone[pid]
}

// killMonitor runs the death callback of a pod's watched monitor, as its
// pidfd would, and waits for it.
func (f *fakeWorld) killMonitor(t *testing.T, socket string) {
	t.Helper()
	f.mu.Lock()
	died := f.died[socketID(socket)]
	f.mu.Unlock()
	if died == nil {
		t.Fatalf("monitor %s is not watched", socket)
	}
	died()
}

func (f *fakeWorld) Adopt(_ context.Context, _ string, r monitor.AdoptRequest) error {
	return f.call("adopt", r.ID)
}

func (f *fakeWorld) Ping(_ context.Context, socket string) error {
	return f.call("ping", socketID(socket))
}

func (f *fakeWorld) Stop(_ context.Context, socket string, _ int) error {
	return f.call("stop-monitor", socketID(socket))
}

func (f *fakeWorld) Run(_ context.Context, _ string, r monitor.CreateRequest) (int, bool, error) {
	if err := f.call("run", r.ID); err != nil {
		return 0, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeInitPid, !f.oldMonitor, nil
}

func (f *fakeWorld) Start(_ context.Context, _, id string) error  { return f.call("start", id) }
func (f *fakeWorld) Forget(_ context.Context, _, id string) error { return f.call("forget", id) }
func (f *fakeWorld) ReopenLog(_ context.Context, _, id string) error {
	return f.call("reopen-log", id)
}

func (f *fakeWorld) Attach(_ context.Context, _, id string, _ monitor.AttachRequest, _ monitor.AttachStreams) error {
	return f.call("attach", id)
}

// PinNamespaces makes each asked pin a plain file and marks it live.
func (f *fakeWorld) PinNamespaces(o network.PinOptions) (*network.Namespaces, error) {
	if err := f.call("pin", dirID(o.Dir)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	ns := &network.Namespaces{}
	for _, p := range []struct {
		on   bool
		name string
		to   *string
	}{{o.User != nil, "user", &ns.User}, {o.Net, "net", &ns.Net}, {o.IPC, "ipc", &ns.IPC}, {o.UTS, "uts", &ns.UTS}} {
		if !p.on {
			continue
		}
		*p.to = filepath.Join(o.Dir, p.name)
		if err := os.WriteFile(*p.to, nil, 0o600); err != nil {
			return nil, err
		}
		f.setPinned(*p.to, true)
	}
	return ns, nil
}

func (f *fakeWorld) setPinned(path string, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pinned[path] = live
}

// UnpinNamespaces removes the pin files and their dir, as network.Unpin.
func (f *fakeWorld) UnpinNamespaces(dir string) error {
	if err := f.call("unpin", dirID(dir)); err != nil {
		return err
	}
	for _, name := range []string{"user", "net", "ipc", "uts"} {
		f.setPinned(filepath.Join(dir, name), false)
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (f *fakeWorld) UnpinOne(path string) error {
	if err := f.call("unpin-one", dirID(filepath.Dir(path))); err != nil {
		return err
	}
	f.setPinned(path, false)
	return nil
}

func (f *fakeWorld) IsPinned(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pinned[path]
}

// MountRootfs makes the dirs image.MountRootfs makes, and mounts nothing.
func (f *fakeWorld) MountRootfs(_ []string, upper, work, target string, _ *image.IDMap) error {
	if err := f.call("mount", dirID(target)); err != nil {
		return err
	}
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeWorld) UnmountRootfs(target string) error { return f.call("unmount", dirID(target)) }

// volumeID is the container id of <containers>/<id>/imagevolumes/<index>.
func volumeID(target string) string { return filepath.Base(filepath.Dir(filepath.Dir(target))) }

// MountImageVolume makes the dirs image.MountImageVolume makes (before
// it mounts, so a failed mount leaves them too), and mounts nothing: the
// target stays an empty directory but for what a hook puts there.
func (f *fakeWorld) MountImageVolume(_ []string, emptyDir, target string, _ *image.IDMap) error {
	for _, d := range []string{emptyDir, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return f.call("mount-image", volumeID(target))
}

func (f *fakeWorld) UnmountImageVolume(target string) error {
	return f.call("unmount-image", volumeID(target))
}

func (f *fakeWorld) WaitForPlugins(_ context.Context, podID string) {
	_ = f.call("wait-plugins", podID)
}

// Setup is CNI ADD: the pod gets 10.88.0.5.
func (f *fakeWorld) Setup(_ context.Context, a network.Attachment) (*network.Result, error) {
	if err := f.call("setup", a.PodID); err != nil {
		return nil, err
	}
	return &network.Result{Interface: "eth0", IPs: []net.IP{net.ParseIP("10.88.0.5")}}, nil
}

func (f *fakeWorld) Teardown(_ context.Context, a network.Attachment) error {
	f.mu.Lock()
	f.teardowns = append(f.teardowns, a)
	f.mu.Unlock()
	return f.call("teardown", a.PodID)
}

// newFakeService is a Service on temp dirs with f in place of runc, the
// monitors, the host and CNI, and f's temp dir as its cgroup root.
func newFakeService(t *testing.T, root, state string, f *fakeWorld) *Service {
	t.Helper()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	writeFile(t, resolv, "nameserver 192.0.2.53\n")
	s, err := New(Config{RootDir: root, StateDir: state, RuncPath: "/nonexistent/runc",
		MonitorPath: "/nonexistent/berth-monitor", PausePath: "/nonexistent/berth-pause",
		Images: noImages{}, Network: f, Logger: slog.New(slog.DiscardHandler), HostResolvConf: resolv,
		UsernsSupport: map[string]error{DefaultHandler: nil}})
	if err != nil {
		t.Fatal(err)
	}
	f.use(s)
	if f.cgroupRoot == "" {
		f.cgroupRoot = t.TempDir()
	}
	s.cgroupRoot = f.cgroupRoot
	return s
}

// readyPod makes a service on fakes whose image store is images, runs one
// pod and clears the fakes' calls; it returns the service, the fakes and
// the pod's id.
func readyPod(t *testing.T, images Images) (*Service, *fakeWorld, string) {
	t.Helper()
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	s.cfg.Images = images
	sbID, err := s.RunSandbox(context.Background(), goodSandboxConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	return s, f, sbID
}
