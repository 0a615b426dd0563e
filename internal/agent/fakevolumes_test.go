package agent

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/volume"
)

// fakeVolumes puts every volume in a directory of its own.
type fakeVolumes struct {
	root     string
	mu       sync.Mutex
	torndown []string
	sweeps   int                        // TeardownOrphans calls
	sources  map[string]podspec.Sources // by pod uid, as last set up
	// setupGate, when set, holds every Setup until it is closed.
	setupGate chan struct{}
	// claims resolves persistentVolumeClaim volumes, as the real manager's.
	claims volume.ClaimResolver
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
		if c := vol.PersistentVolumeClaim; c != nil && v.claims != nil {
			path, err := v.claims.ClaimPath(pod, c.ClaimName)
			if err != nil {
				return paths, err
			}
			paths[vol.Name] = path
			continue
		}
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
