package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rpcTimeout bounds one CRI call.
const rpcTimeout = time.Minute

// criClient drives one runtime handler of one CRI endpoint: every runtime
// the bench measures goes through these same calls, over one gRPC
// connection per endpoint.
type criClient struct {
	e        *env
	endpoint string // unix://<socket>
	handler  string // RunPodSandbox's runtime_handler; "" is the endpoint's default
	rt       runtimeapi.RuntimeServiceClient
	// fsyncs reads the runtime's count of store flushes: berth's
	// berth_store_fsyncs_total; nil for containerd, which has none.
	fsyncs func() (uint64, error)
}

// withHandler is the same client and connection asking for another
// runtime handler.
func (c criClient) withHandler(handler string) criClient {
	c.handler = handler
	return c
}

// podConfig is a sandbox config shaped like kubelet's: pod network, pod IPC,
// and the given PID namespace mode (kubelet's default is CONTAINER).
func (e *env) podConfig(name string, pid runtimeapi.NamespaceMode) (*runtimeapi.PodSandboxConfig, error) {
	logDir := filepath.Join(e.work, "logs", name)
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("pod %s: log directory: %w", name, err)
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: name + "-uid-" + e.id},
		Hostname:     name,
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     pid,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}, nil
}

// sleepContainer is the benchmark's container: `sleep 3600` in busybox.
func sleepContainer() *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{"sleep", "3600"},
		LogPath:  "sleep.log",
	}
}

// timedCall runs one RPC under its own timeout and returns its wall time.
func timedCall(ctx context.Context, name string, call func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("%s: %w", name, err)
	}
	return took, nil
}

// runPod runs a sandbox and returns its id and the call's wall time.
func (c criClient) runPod(ctx context.Context, cfg *runtimeapi.PodSandboxConfig) (string, time.Duration, error) {
	var id string
	took, err := timedCall(ctx, "RunPodSandbox "+cfg.GetMetadata().GetName(), func(ctx context.Context) error {
		resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: c.handler})
		id = resp.GetPodSandboxId()
		return err
	})
	return id, took, err
}

// createContainer creates the sleep container in a sandbox.
func (c criClient) createContainer(ctx context.Context, podID string, podCfg *runtimeapi.PodSandboxConfig) (string, time.Duration, error) {
	var id string
	took, err := timedCall(ctx, "CreateContainer in "+podID, func(ctx context.Context) error {
		resp, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: podID, Config: sleepContainer(), SandboxConfig: podCfg,
		})
		id = resp.GetContainerId()
		return err
	})
	return id, took, err
}

func (c criClient) startContainer(ctx context.Context, id string) (time.Duration, error) {
	return timedCall(ctx, "StartContainer "+id, func(ctx context.Context) error {
		_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
		return err
	})
}

func (c criClient) stopPod(ctx context.Context, id string) (time.Duration, error) {
	return timedCall(ctx, "StopPodSandbox "+id, func(ctx context.Context) error {
		_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		return err
	})
}

func (c criClient) removePodTimed(ctx context.Context, id string) (time.Duration, error) {
	return timedCall(ctx, "RemovePodSandbox "+id, func(ctx context.Context) error {
		_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		return err
	})
}

// podPids returns the pod's monitor pid and its berth-pause pid (0 without
// one) from the verbose sandbox status.
func (c criClient) podPids(ctx context.Context, id string) (monitorPid, pausePid int, err error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return 0, 0, fmt.Errorf("PodSandboxStatus %s: %w", id, err)
	}
	var info struct {
		MonitorPid int `json:"monitorPid"`
		Pid        int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.MonitorPid <= 0 {
		return 0, 0, fmt.Errorf("PodSandboxStatus %s: verbose info has no monitorPid (%v)", id, err)
	}
	return info.MonitorPid, info.Pid, nil
}

// startPodWithContainer runs a sandbox with a running sleep container and
// returns the sandbox id.
func (c criClient) startPodWithContainer(ctx context.Context, name string, pid runtimeapi.NamespaceMode) (string, error) {
	cfg, err := c.e.podConfig(name, pid)
	if err != nil {
		return "", err
	}
	podID, _, err := c.runPod(ctx, cfg)
	if err != nil {
		return "", err
	}
	ctrID, _, err := c.createContainer(ctx, podID, cfg)
	if err != nil {
		return podID, err
	}
	_, err = c.startContainer(ctx, ctrID)
	return podID, err
}
