package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
)

// floors are the same-machine lower bounds berth's calls are compared with.
type floors struct {
	pin          []time.Duration // network.Pin of net+ipc+uts
	cniAdd       []time.Duration // CNI.Setup: lo up, then berth's network
	cniDel       []time.Duration // CNI.Teardown right after (from the cache)
	cniDelAgain  []time.Duration // a second Teardown: nothing cached any more
	monitor      []time.Duration // monitor.Launch until the socket listens
	runcRun      []time.Duration // `runc run` of true
	runcCreate   []time.Duration // `runc create` of sleep
	runcStart    []time.Duration // `runc start` of it
	runcCreStart []time.Duration // the sum
	runcDelete   []time.Duration // `runc delete --force` of the running sleep
	// The pinned runc on berth's own bundle (bundlefloor.go).
	bundleCreStart []time.Duration // `runc create` + `runc start`
	bundleRun      []time.Duration // `runc run --detach`
}

// measureNetworkFloors times namespace pinning and CNI ADD with the daemon's
// own conflist and plugins, into fresh namespaces, then two Teardowns (the
// second finds nothing cached, as RemovePodSandbox after StopPodSandbox
// does). Unpin is not timed. A warm-up run is discarded.
func (e *env) measureNetworkFloors(ctx context.Context, n int, f *floors) error {
	cni := network.NewCNI(network.CNIConfig{
		ConfDir:  e.confDir,
		BinDirs:  []string{cniBinDir},
		CacheDir: filepath.Join(e.floors, "cni-cache"),
	})
	for i := 0; i <= n; i++ {
		t, err := e.networkFloorOnce(ctx, cni, i)
		if err != nil {
			return err
		}
		if i > 0 {
			f.pin = append(f.pin, t[0])
			f.cniAdd = append(f.cniAdd, t[1])
			f.cniDel = append(f.cniDel, t[2])
			f.cniDelAgain = append(f.cniDelAgain, t[3])
		}
	}
	return nil
}

// networkFloorOnce returns the times of Pin, Setup, Teardown, Teardown.
func (e *env) networkFloorOnce(ctx context.Context, cni *network.CNI, i int) (t [4]time.Duration, err error) {
	dir := filepath.Join(e.floors, "ns", fmt.Sprint(i))
	start := time.Now()
	ns, err := network.Pin(network.PinOptions{Dir: dir, Net: true, IPC: true, UTS: true, Hostname: "floor"})
	t[0] = time.Since(start)
	if err != nil {
		return t, fmt.Errorf("floor: %w", err)
	}
	defer func() {
		if uerr := network.Unpin(dir); uerr != nil {
			err = errors.Join(err, fmt.Errorf("floor: %w", uerr))
		}
	}()
	a := network.Attachment{
		PodID: fmt.Sprintf("bbfloor%s-%d", e.id, i), PodName: fmt.Sprintf("floor-%d", i),
		PodNamespace: "bench", PodUID: fmt.Sprintf("floor-%s-%d", e.id, i), NetnsPath: ns.Net,
	}
	start = time.Now()
	_, err = cni.Setup(ctx, a)
	t[1] = time.Since(start)
	if err != nil {
		return t, fmt.Errorf("floor: CNI ADD: %w", err)
	}
	for j := 2; j < 4; j++ {
		start = time.Now()
		err = cni.Teardown(context.WithoutCancel(ctx), a)
		t[j] = time.Since(start)
		if err != nil {
			return t, fmt.Errorf("floor: CNI DEL: %w", err)
		}
	}
	return t, nil
}

// measureMonitorFloor times starting a berth-monitor until it listens, the
// RunPodSandbox step after CNI. A warm-up run is discarded.
func (e *env) measureMonitorFloor(ctx context.Context, n int, f *floors) error {
	exits := filepath.Join(e.floors, "exits")
	if err := os.MkdirAll(exits, 0o700); err != nil {
		return fmt.Errorf("floor: monitor exit dir: %w", err)
	}
	for i := 0; i <= n; i++ {
		socket := filepath.Join(e.floors, fmt.Sprintf("monitor-%d.sock", i))
		start := time.Now()
		pid, err := monitor.Launch(monitor.LaunchOptions{
			Binary: filepath.Join(e.binDir, "berth-monitor"), PodID: fmt.Sprintf("bbfloor%s-%d", e.id, i),
			Socket: socket, ExitDir: exits, RuncRoot: e.runcRoot(),
		})
		took := time.Since(start)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		if err := shutdownMonitor(ctx, socket, pid); err != nil {
			return err
		}
		if i > 0 {
			f.monitor = append(f.monitor, took)
		}
	}
	return nil
}

// shutdownMonitor asks a monitor the bench launched to exit and waits until
// its pid is gone (Launch's goroutine reaps it).
func shutdownMonitor(ctx context.Context, socket string, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := monitor.NewClient(socket).Shutdown(ctx); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL) // our own child, not yet reaped
		return fmt.Errorf("floor: monitor pid %d: shutdown: %w", pid, err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("floor: monitor pid %d: still running 5s after shutdown", pid)
}
