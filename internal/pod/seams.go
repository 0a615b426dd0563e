package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/procwatch"
	"github.com/berth-dev/berth/internal/runc"
)

// The seams below are what the service needs of runc, the pod monitors and
// the host. New wires the real implementations; the package's unit tests
// replace them with fakes, so that RunSandbox's rollback and recovery run
// without root, runc or a monitor.

// containerRuntime is what the service needs of runc (internal/runc.Runc).
type containerRuntime interface {
	State(ctx context.Context, id string) (*runc.State, error)
	Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error
	Delete(ctx context.Context, id string, force bool) error
	Update(ctx context.Context, id string, resources []byte) error
	StartExec(id string, o runc.ExecOpts) (*runc.Execution, error)
}

// podMonitors starts, checks and stops the pod monitor processes.
type podMonitors interface {
	// Launch starts a pod's monitor and returns its pid once it listens.
	Launch(o monitor.LaunchOptions) (int, error)
	// Ping checks that the monitor on socket answers.
	Ping(ctx context.Context, socket string) error
	// Stop makes the monitor on socket exit, by pid if it does not answer;
	// pid 0 means unknown. A monitor already gone is not an error.
	Stop(ctx context.Context, socket string, pid int) error
	// Alive reports whether pid is still the monitor serving socket.
	Alive(pid int, socket string) bool
	// Watch calls died once when the monitor pid (serving socket) ends;
	// stop ends the watch. A pid that is gone or is no such monitor is
	// ErrNotFound.
	Watch(pid int, socket string, died func()) (stop func(), err error)
}

// monitorCalls asks a pod's monitor (on its socket) to act on one of the
// pod's containers.
type monitorCalls interface {
	// Run creates and starts r's container in one `runc run --detach`;
	// started is false when the monitor predates that and only created it.
	Run(ctx context.Context, socket string, r monitor.CreateRequest) (pid int, started bool, err error)
	Start(ctx context.Context, socket, id string) error
	Adopt(ctx context.Context, socket string, r monitor.AdoptRequest) error
	Forget(ctx context.Context, socket, id string) error
	ReopenLog(ctx context.Context, socket, id string) error
	Attach(ctx context.Context, socket, id string, req monitor.AttachRequest, st monitor.AttachStreams) error
}

// podHost is what the service does on the host itself: namespace pins,
// overlay rootfs and image volume mounts (all need CAP_SYS_ADMIN), and the wait for CNI
// plugins still working on a pod (it reads other processes' environments).
type podHost interface {
	PinNamespaces(o network.PinOptions) (*network.Namespaces, error)
	UnpinNamespaces(dir string) error
	// UnpinOne unpins one namespace (the net pin at a pod's stop).
	UnpinOne(path string) error
	IsPinned(path string) bool
	MountRootfs(layers []string, upper, work, target string, idmap *image.IDMap) error
	UnmountRootfs(target string) error
	MountImageVolume(layers []string, emptyDir, target string, idmap *image.IDMap) error
	UnmountImageVolume(target string) error
	WaitForPlugins(ctx context.Context, podID string)
}

// monitorClients is the real podMonitors and monitorCalls: internal/monitor.
type monitorClients struct{}

func (monitorClients) Launch(o monitor.LaunchOptions) (int, error) { return monitor.Launch(o) }

func (monitorClients) Ping(ctx context.Context, socket string) error {
	return monitor.NewClient(socket).Ping(ctx)
}

func (monitorClients) Run(ctx context.Context, socket string, r monitor.CreateRequest) (int, bool, error) {
	return monitor.NewClient(socket).Run(ctx, r)
}

func (monitorClients) Start(ctx context.Context, socket, id string) error {
	return monitor.NewClient(socket).Start(ctx, id)
}

func (monitorClients) Adopt(ctx context.Context, socket string, r monitor.AdoptRequest) error {
	return monitor.NewClient(socket).Adopt(ctx, r)
}

func (monitorClients) Alive(pid int, socket string) bool { return isMonitorProcess(pid, socket) }

// Watch watches a monitor through a pidfd (internal/procwatch), checking
// after it is open that the pid is that monitor: a reused pid is refused.
func (monitorClients) Watch(pid int, socket string, died func()) (func(), error) {
	p, err := procwatch.Open(pid)
	if err != nil {
		return nil, err
	}
	if !isMonitorProcess(pid, socket) {
		_ = p.Close()
		return nil, fmt.Errorf("pid %d: not the monitor of %s: %w", pid, socket, errdefs.ErrNotFound)
	}
	go func() {
		if p.Wait() == nil {
			died()
		}
	}()
	return func() { _ = p.Close() }, nil
}

func (monitorClients) Forget(ctx context.Context, socket, id string) error {
	return monitor.NewClient(socket).Forget(ctx, id)
}

func (monitorClients) ReopenLog(ctx context.Context, socket, id string) error {
	return monitor.NewClient(socket).ReopenLog(ctx, id)
}

func (monitorClients) Attach(ctx context.Context, socket, id string, req monitor.AttachRequest, st monitor.AttachStreams) error {
	return monitor.NewClient(socket).Attach(ctx, id, req, st)
}

// Stop asks a pod monitor to exit and waits until it has; if it does not
// answer or stay, it kills it by pid after checking that the pid still is
// that monitor.
func (monitorClients) Stop(ctx context.Context, socket string, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := monitor.NewClient(socket).Shutdown(ctx)
	if pid == 0 || (err == nil && monitorGone(ctx, pid, socket)) {
		_ = os.Remove(socket)
		return nil
	}
	if isMonitorProcess(pid, socket) {
		if kerr := syscall.Kill(pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			return fmt.Errorf("kill pid %d: %w", pid, kerr)
		}
	}
	_ = os.Remove(socket)
	return nil
}

// monitorGone waits until the monitor that answered Shutdown has exited (it
// answers first), or ctx ends; it reports whether it exited.
func monitorGone(ctx context.Context, pid int, socket string) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for isMonitorProcess(pid, socket) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// isMonitorProcess guards against pid reuse: the process must be a
// berth-monitor serving this socket.
func isMonitorProcess(pid int, socket string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	cmd := string(b)
	return strings.Contains(cmd, "berth-monitor") && strings.Contains(cmd, socket)
}

// hostOps is the real podHost: internal/network and internal/image.
type hostOps struct{}

func (hostOps) PinNamespaces(o network.PinOptions) (*network.Namespaces, error) {
	return network.Pin(o)
}
func (hostOps) UnpinNamespaces(dir string) error { return network.Unpin(dir) }
func (hostOps) UnpinOne(path string) error       { return network.UnpinOne(path) }
func (hostOps) IsPinned(path string) bool        { return network.IsPinned(path) }
func (hostOps) MountRootfs(layers []string, upper, work, target string, idmap *image.IDMap) error {
	return image.MountRootfs(layers, upper, work, target, idmap)
}
func (hostOps) UnmountRootfs(target string) error { return image.UnmountRootfs(target) }
func (hostOps) MountImageVolume(layers []string, emptyDir, target string, idmap *image.IDMap) error {
	return image.MountImageVolume(layers, emptyDir, target, idmap)
}
func (hostOps) UnmountImageVolume(target string) error { return image.UnmountImageVolume(target) }
func (hostOps) WaitForPlugins(ctx context.Context, podID string) {
	network.WaitForPlugins(ctx, podID)
}
