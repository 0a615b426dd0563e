package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/userns"
)

// usernsField is the request field of a pod's user namespace.
const usernsField = "config.linux.security_context.namespace_options.userns_options"

// sandboxUserns is the mapping of a pod that asks for its own user
// namespace (mode POD), nil for one that does not (NODE, or unset).
func sandboxUserns(cfg *runtimeapi.PodSandboxConfig) *userns.Mapping {
	u := namespaceMode(cfg).GetUsernsOptions()
	if u == nil || u.GetMode() != runtimeapi.NamespaceMode_POD {
		return nil
	}
	m := userns.FromCRI(u)
	return &m
}

// validateUserns checks a pod's user namespace before any side effect:
// its mode, its mapping (userns.Mapping.Check against the allowed range),
// that it shares no namespace with the host (Kubernetes refuses hostUsers:
// false with host network, IPC or PID, and a user namespace cannot own the
// host's), and that the pod's runtime handler supports user namespaces.
func (s *Service) validateUserns(cfg *runtimeapi.PodSandboxConfig, handler string) error {
	u := namespaceMode(cfg).GetUsernsOptions()
	if u == nil || u.GetMode() == runtimeapi.NamespaceMode_NODE {
		return nil
	}
	if u.GetMode() != runtimeapi.NamespaceMode_POD {
		return invalid(usernsField+".mode", "%s: only POD and NODE are supported", u.GetMode())
	}
	if err := userns.FromCRI(u).Check(usernsField, s.cfg.UsernsRange); err != nil {
		return err
	}
	ns := namespaceMode(cfg)
	for field, mode := range map[string]runtimeapi.NamespaceMode{"network": ns.GetNetwork(), "ipc": ns.GetIpc(), "pid": ns.GetPid()} {
		if mode == runtimeapi.NamespaceMode_NODE {
			return invalid("config.linux.security_context.namespace_options."+field, "NODE: a pod in its own user namespace cannot share the host's %s namespace", field)
		}
	}
	err, probed := s.cfg.UsernsSupport[handlerName(handler)]
	if !probed {
		err = fmt.Errorf("not probed")
	}
	if err != nil {
		return fmt.Errorf("%s: runtime handler %q does not support user namespaces: %v: %w", usernsField, handlerName(handler), err, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// usernsLeases are the mappings of the pods that hold one: a new pod's may
// not overlap another's (two pods sharing host ids could reach each
// other's files and processes). A pod holds its lease from RunSandbox until
// it stops.
type usernsLeases struct {
	mu   sync.Mutex
	held map[string]lease // by sandbox id
}

type lease struct {
	name    string
	mapping userns.Mapping
}

// take leases m to sandbox id (name for errors), or says which pod's
// mapping it overlaps.
func (l *usernsLeases) take(id, name string, m userns.Mapping) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, o := range l.held {
		if other != id && o.mapping.Overlaps(m) {
			return fmt.Errorf("%s: host ids %s overlap those of pod sandbox %s (%s): %w",
				usernsField, m.UIDs[0], other, o.name, errdefs.ErrFailedPrecondition)
		}
	}
	if l.held == nil {
		l.held = map[string]lease{}
	}
	l.held[id] = lease{name: name, mapping: m}
	return nil
}

// release ends sandbox id's lease; idempotent.
func (l *usernsLeases) release(id string) {
	l.mu.Lock()
	delete(l.held, id)
	l.mu.Unlock()
}

// rootfsIDMap is how a container of sb sees an image's layers: idmapped
// into the pod's user namespace, attached under scratch (a directory of
// the container's, idmapScratchPrefix*) while the overlay is made; nil
// for a pod without one.
func rootfsIDMap(sb *Sandbox, scratch string) *image.IDMap {
	m := sandboxUserns(sb.Config)
	if m == nil || sb.UserNS == "" {
		return nil
	}
	return &image.IDMap{UserNS: sb.UserNS, RootUID: m.RootUID(), RootGID: m.RootGID(), Scratch: scratch}
}

// idmapScratchPrefix names the scratch directories of idmapped layers in
// a container's directory: idmapped-rootfs, idmapped-volume-<index>.
const idmapScratchPrefix = "idmapped-"

// releaseIDMapScratch detaches the idmapped layers a crash left attached
// in a container's directory, before anything removes that directory.
func releaseIDMapScratch(containerDir string) error {
	dirs, _ := filepath.Glob(filepath.Join(containerDir, idmapScratchPrefix+"*"))
	var errs []error
	for _, d := range dirs {
		errs = append(errs, image.ReleaseIDMapScratch(d))
	}
	return errors.Join(errs...)
}

// makeUsernsPodDir makes the directory of a user-namespaced pod's
// container root filesystems: root:<the pod's root gid> 0710, so that
// runc's init, already the pod's root in the pod's user namespace, can
// reach them (it resolves the rootfs path there), and no other host user
// can.
func (s *Service) makeUsernsPodDir(rec *Sandbox, rb *rollback) error {
	m := sandboxUserns(rec.Config)
	if m == nil {
		return nil
	}
	dir := filepath.Join(s.usernsDir(), rec.ID)
	rb.add("remove user namespace rootfs directory", func(context.Context) error { return removeEmptyDir(dir) })
	if err := os.Mkdir(dir, 0o710); err != nil {
		return fmt.Errorf("pod sandbox %s: rootfs directory: %w", rec.ID, err)
	}
	if err := os.Chown(dir, 0, int(m.RootGID())); err != nil {
		return fmt.Errorf("pod sandbox %s: rootfs directory: %w", rec.ID, err)
	}
	return os.Chmod(dir, 0o710) // past the umask
}

// containerRootfs is where a container's rootfs is mounted: in its
// bundle, or, in a pod with a user namespace, in the pod's directory under
// usernsDir.
func (s *Service) containerRootfs(sb *Sandbox, id, bundle string) string {
	if sandboxUserns(sb.Config) != nil {
		return filepath.Join(s.usernsDir(), sb.ID, id)
	}
	return filepath.Join(bundle, "rootfs")
}

// removeEmptyDir removes dir if it is there: never what is under it (a
// rootfs still mounted there stays, and so does the directory).
func removeEmptyDir(dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	return nil
}

// inUsernsDir reports whether a recorded rootfs lies in usernsDir.
func (s *Service) inUsernsDir(rootfs string) bool {
	return rootfs != "" && filepath.Dir(filepath.Dir(rootfs)) == s.usernsDir()
}
