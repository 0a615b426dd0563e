package pod

import (
	"sync"
	"time"
)

// layersUsageTTL is how long a walk of the writable layers is reused:
// kubelet asks ImageFsInfo every few seconds, and the layers may be big
// trees.
const layersUsageTTL = 5 * time.Second

// layersUsageCache keeps the last walk of the writable layers.
type layersUsageCache struct {
	mu    sync.Mutex
	usage DiskUsage
}

// WritableLayersUsage is the space the containers' writable layers
// (overlay upper and work dirs, with the containers' records) use: a walk
// of <root>/containers, hard links counted once, reused for
// layersUsageTTL. Its Path is that directory, the container filesystem
// of CRI ImageFsInfo.
func (s *Service) WritableLayersUsage() (DiskUsage, error) {
	c := &s.layersUsage
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.usage.Time.IsZero() && time.Since(c.usage.Time) < layersUsageTTL {
		return c.usage, nil
	}
	du, err := diskUsage(s.containersDir())
	if err != nil {
		return DiskUsage{}, err
	}
	c.usage = du
	return du, nil
}
