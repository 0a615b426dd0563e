package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent"
	"github.com/berth-dev/berth/internal/agent/imagegc"
)

// gcFlags are kubelet's garbage collection flags, with its names and
// defaults, on `berth serve` and `berth agent`.
type gcFlags struct {
	imageHigh, imageLow      int
	imageMinAge, imageMaxAge time.Duration
	imagePeriod              time.Duration
	containerMinAge          time.Duration
	maxPerPodContainer       int
	maxContainers            int
	podInfraImage            string
}

func (f *gcFlags) bind(fs *pflag.FlagSet) {
	fs.IntVar(&f.imageHigh, "image-gc-high-threshold", imagegc.DefaultHighThresholdPercent,
		"percent of the image filesystem in use at which unused images are removed (100: never)")
	fs.IntVar(&f.imageLow, "image-gc-low-threshold", imagegc.DefaultLowThresholdPercent,
		"percent of the image filesystem in use down to which unused images are removed; below --image-gc-high-threshold")
	fs.DurationVar(&f.imageMinAge, "image-minimum-gc-age", imagegc.DefaultMinAge, "an image first seen less long ago is never removed")
	fs.DurationVar(&f.imageMaxAge, "image-maximum-gc-age", 0, "remove images unused for longer than this whatever the disk usage (0: never)")
	fs.DurationVar(&f.imagePeriod, "image-gc-period", imagegc.DefaultPeriod, "how often image garbage collection runs (berth's own; kubelet's is 5m)")
	fs.StringVar(&f.podInfraImage, "pod-infra-container-image", "",
		"an image image garbage collection never removes: the runtime's sandbox image, where the runtime does not pin it")
	fs.DurationVar(&f.containerMinAge, "minimum-container-ttl-duration", 0, "an exited container created less long ago is not removed")
	fs.IntVar(&f.maxPerPodContainer, "maximum-dead-containers-per-container", agent.DefaultContainerGCPolicy().MaxPerPodContainer,
		"exited instances kept of each container besides its newest (negative: all)")
	fs.IntVar(&f.maxContainers, "maximum-dead-containers", agent.DefaultContainerGCPolicy().MaxContainers,
		"exited containers kept on the node besides each container's newest (negative: no bound)")
}

// config is the agent's garbage collection configuration; it fails as
// kubelet's configuration validation does.
func (f *gcFlags) config() (agent.GCConfig, error) {
	images := imagegc.Policy{
		HighThresholdPercent: f.imageHigh, LowThresholdPercent: f.imageLow,
		MinAge: f.imageMinAge, MaxAge: f.imageMaxAge,
	}
	if err := images.Validate(); err != nil {
		return agent.GCConfig{}, err
	}
	if f.imagePeriod <= 0 {
		return agent.GCConfig{}, errors.New("--image-gc-period must be positive")
	}
	if f.containerMinAge < 0 {
		return agent.GCConfig{}, errors.New("--minimum-container-ttl-duration must not be negative")
	}
	var pinned []string
	if f.podInfraImage != "" {
		pinned = []string{f.podInfraImage}
	}
	return agent.GCConfig{
		Containers: &agent.ContainerGCPolicy{
			MinAge: f.containerMinAge, MaxPerPodContainer: f.maxPerPodContainer, MaxContainers: f.maxContainers,
		},
		Images: &images, ImagePeriod: f.imagePeriod, PinnedImages: pinned,
	}, nil
}
