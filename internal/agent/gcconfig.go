package agent

import (
	"time"

	"github.com/berth-dev/berth/internal/agent/imagegc"
)

// GCConfig configures the agent's garbage collection. Nil policies and
// zero periods take kubelet's defaults.
type GCConfig struct {
	// Containers is the container GC policy; nil: DefaultContainerGCPolicy.
	Containers *ContainerGCPolicy
	// ContainerPeriod is how often containers are collected besides each
	// pod's syncs; default DefaultContainerGCPeriod.
	ContainerPeriod time.Duration
	// Images is the image GC policy; nil: imagegc.DefaultPolicy.
	Images *imagegc.Policy
	// ImagePeriod is how often images are collected; default
	// imagegc.DefaultPeriod.
	ImagePeriod time.Duration
	// PinnedImages are never removed by image garbage collection: the
	// runtime's sandbox image (kubelet's --pod-infra-container-image), for
	// a runtime that does not pin it (containerd 1.6).
	PinnedImages []string
	// Statfs measures the image filesystem; nil: statfs(2) (tests fake it).
	Statfs func(path string) (imagegc.FsStats, error)
}

// withDefaults fills in kubelet's defaults.
func (c GCConfig) withDefaults() GCConfig {
	if c.Containers == nil {
		p := DefaultContainerGCPolicy()
		c.Containers = &p
	}
	if c.ContainerPeriod <= 0 {
		c.ContainerPeriod = DefaultContainerGCPeriod
	}
	if c.Images == nil {
		p := imagegc.DefaultPolicy()
		c.Images = &p
	}
	return c
}

// ImageGC is the agent's image garbage collection, for the eviction
// manager (DeleteUnusedImages).
func (a *Agent) ImageGC() *imagegc.Manager { return a.imageGC }

// neededImages lists the pinned images and the images the agent's pods
// name, their containers' and their image volumes', deleted pods aside:
// image garbage collection keeps them even when no container of theirs
// exists (a pod waiting for its back-off, or to be started). An image
// volume's image a container of a deleted pod still mounts stays too: the
// runtime refuses to remove it while that container exists.
func (a *Agent) neededImages() []string {
	out := append([]string(nil), a.cfg.GC.PinnedImages...)
	for _, w := range a.workerList() {
		d := w.snapshot()
		if d.terminating() {
			continue
		}
		for _, c := range d.pod.Spec.InitContainers {
			out = append(out, c.Image)
		}
		for _, c := range d.pod.Spec.Containers {
			out = append(out, c.Image)
		}
		for _, v := range d.pod.Spec.Volumes {
			if v.Image != nil {
				out = append(out, v.Image.Reference)
			}
		}
	}
	return out
}
