package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// Plugin directory names under <pod>/volumes, as the kubelet names them.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret" //nolint:gosec // G101: a directory name, not a credential
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
)

// Manager materializes pod volumes under Root.
type Manager struct {
	// Root holds pods/<uid>/volumes/<plugin>/<name>.
	Root string
	// Claims binds persistentVolumeClaim volumes; nil: they are refused.
	Claims ClaimResolver
}

// PodDir is <Root>/pods/<uid>; Teardown removes it whole, so the agent may
// keep other per-pod files (termination-message files) there too.
func (m *Manager) PodDir(uid string) string {
	return filepath.Join(m.Root, "pods", uid)
}

// VolumeDir is where a volume of the given plugin lives.
func (m *Manager) VolumeDir(uid, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", plugin, name)
}

// Setup makes every volume of the pod ready and returns where each is on
// the host. It is meant to be called on every sync: existing directories and
// mounts are kept, and configMap, secret, downwardAPI and projected contents
// are rewritten (atomically, see writeAtomic) only when they changed. A
// volume that cannot be set up does not stop the others; the error joins
// every failure, each naming its volume, and the paths hold the volumes that
// are usable: those set up, and generated volumes whose update failed (a
// ConfigMap gone, say) but which still hold an earlier version, as a
// kubelet keeps serving the last content it wrote.
func (m *Manager) Setup(ctx context.Context, pod *v1.Pod, sources podspec.Sources, dw podspec.Downward) (podspec.VolumePaths, error) {
	uid := string(pod.UID)
	if err := checkUID(uid); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(m.Root) {
		return nil, fmt.Errorf("volume root %q: not an absolute path", m.Root)
	}
	if err := os.MkdirAll(filepath.Join(m.PodDir(uid), "volumes"), 0o750); err != nil {
		return nil, fmt.Errorf("pod %s/%s: volumes dir: %w", pod.Namespace, pod.Name, err)
	}
	paths := podspec.VolumePaths{}
	var errs []error
	for i := range pod.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return paths, errors.Join(append(errs, err)...)
		}
		vol := &pod.Spec.Volumes[i]
		path, err := m.setupVolume(pod, vol, sources, dw)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", vol.Name, err))
		}
		if path != "" {
			paths[vol.Name] = path
		}
	}
	return paths, errors.Join(errs...)
}

func (m *Manager) setupVolume(pod *v1.Pod, vol *v1.Volume, sources podspec.Sources, dw podspec.Downward) (string, error) {
	uid := string(pod.UID)
	fsGroup := podFSGroup(pod)
	src := &vol.VolumeSource
	switch {
	case src.Image != nil:
		return "", nil // the runtime mounts an image volume (CRI Mount.image): nothing on the host
	case src.HostPath != nil:
		return hostPath(src.HostPath)
	case src.PersistentVolumeClaim != nil:
		return m.claimPath(pod, src.PersistentVolumeClaim)
	case src.EmptyDir != nil:
		dir := m.VolumeDir(uid, PluginEmptyDir, vol.Name)
		if err := setupEmptyDir(dir, src.EmptyDir, fsGroup); err != nil {
			return "", err
		}
		return dir, nil
	case src.ConfigMap != nil:
		return m.setupFiles(uid, PluginConfigMap, vol.Name, false, fsGroup, func() (payload, error) {
			return configMapPayload(src.ConfigMap, sources)
		})
	case src.Secret != nil:
		return m.setupFiles(uid, PluginSecret, vol.Name, true, fsGroup, func() (payload, error) {
			return secretPayload(src.Secret, sources)
		})
	case src.DownwardAPI != nil:
		return m.setupFiles(uid, PluginDownwardAPI, vol.Name, true, fsGroup, func() (payload, error) {
			return downwardPayload(pod, src.DownwardAPI.Items, src.DownwardAPI.DefaultMode, dw)
		})
	case src.Projected != nil:
		return m.setupFiles(uid, PluginProjected, vol.Name, true, fsGroup, func() (payload, error) {
			return projectedPayload(pod, src.Projected, sources, dw)
		})
	}
	return "", fmt.Errorf("unsupported volume type (berth supports emptyDir, hostPath, persistentVolumeClaim, configMap, secret, downwardAPI, projected)")
}

// setupFiles prepares a volume of generated files: its directory (on a
// tmpfs when inMemory, so the contents never reach a disk) and the payload,
// written atomically.
func (m *Manager) setupFiles(uid, plugin, name string, inMemory bool, fsGroup *int64, build func() (payload, error)) (string, error) {
	dir := m.VolumeDir(uid, plugin, name)
	files, err := build()
	if err != nil {
		if current, _ := currentVersion(dir); current != "" {
			return dir, err
		}
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if inMemory {
		if err := ensureTmpfs(dir, filesTmpfsOptions, "", filesTmpfsFlags); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := writeAtomic(dir, files, fsGroup); err != nil {
		return "", err
	}
	return dir, nil
}

func podFSGroup(pod *v1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

func checkUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("pod uid %q: empty or not usable in a path", uid)
	}
	return nil
}

// Teardown unmounts every mount under the pod's directory (the tmpfs of
// memory-backed volumes), then removes the directory. It is idempotent and
// copes with a Setup that stopped half-way. It refuses to remove anything
// while a mount is still there, so it never deletes through a mount.
func (m *Manager) Teardown(uid string) error {
	if err := checkUID(uid); err != nil {
		return err
	}
	dir := m.PodDir(uid)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unmountAllUnder(dir); err != nil {
		return fmt.Errorf("pod %s: %w", uid, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pod %s: remove %s: %w", uid, dir, err)
	}
	return nil
}

// TeardownOrphans tears down every pod directory whose uid keep does not
// hold, and joins the errors.
func (m *Manager) TeardownOrphans(keep map[string]bool) error {
	entries, err := os.ReadDir(filepath.Join(m.Root, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || keep[e.Name()] {
			continue
		}
		errs = append(errs, m.Teardown(e.Name()))
	}
	return errors.Join(errs...)
}
