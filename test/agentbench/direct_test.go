package agentbench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// directStart is the runtime's own share of a scenario: the same pods and
// containers started by calling CRI directly, as fast as possible (pods in
// parallel, each pod's containers in parallel after its sandbox), without
// the agent. It returns the median wall time over runs.
func (b *bench) directStart(pods, containers, runs int) time.Duration {
	var walls []time.Duration
	for i := 0; i <= runs; i++ {
		start := time.Now()
		ids := b.startDirect(fmt.Sprintf("direct%d", i), pods, containers)
		if i > 0 {
			walls = append(walls, time.Since(start))
		}
		b.removeDirect(ids)
	}
	slices.Sort(walls)
	return walls[len(walls)/2]
}

func (b *bench) startDirect(prefix string, pods, containers int) []string {
	ids := make([]string, pods)
	var wg sync.WaitGroup
	for p := 0; p < pods; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			ids[p] = b.startDirectPod(fmt.Sprintf("%s-%d", prefix, p), containers)
		}(p)
	}
	wg.Wait()
	return ids
}

func (b *bench) startDirectPod(name string, containers int) string {
	ctx := context.Background()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: name + "-uid"},
		LogDirectory: b.t.TempDir(),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := b.d.RT.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		b.t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	var wg sync.WaitGroup
	for c := 0; c < containers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			b.startDirectContainer(sb.PodSandboxId, cfg, fmt.Sprintf("c%d", c))
		}(c)
	}
	wg.Wait()
	return sb.PodSandboxId
}

func (b *bench) startDirectContainer(podID string, podCfg *runtimeapi.PodSandboxConfig, name string) {
	ctx := context.Background()
	ctr, err := b.d.RT.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, SandboxConfig: podCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"},
			Command:  []string{"sleep", "3600"}, LogPath: name + ".log",
			Linux: &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		b.t.Fatalf("CreateContainer %s: %v", name, err)
	}
	if _, err := b.d.RT.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		b.t.Fatalf("StartContainer %s: %v", name, err)
	}
}

func (b *bench) removeDirect(ids []string) {
	ctx := context.Background()
	for _, id := range ids {
		if _, err := b.d.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			b.t.Fatalf("StopPodSandbox: %v", err)
		}
		if _, err := b.d.RT.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			b.t.Fatalf("RemovePodSandbox: %v", err)
		}
	}
}
