package store

import (
	"fmt"
	"os"
)

// PrivateDirMode is the mode of every directory berth keeps its records,
// bundles, mounts, sockets and pod files in: only root may enter. A host
// user who could reach a container's rootfs could run its setuid binaries
// or open device nodes planted in it.
const PrivateDirMode os.FileMode = 0o700

// MkdirPrivate creates dir and its missing parents with PrivateDirMode and
// takes group and other permissions away from dir if it already exists
// (an older berth made some of these directories 0711). A symlink at dir is
// followed (an admin may move /var/lib/berth elsewhere); anything but a
// directory is refused.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, PrivateDirMode); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("directory %s: not a directory (%v)", dir, info.Mode().Type())
	}
	if info.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, info.Mode().Perm()&^0o077); err != nil {
		return fmt.Errorf("directory %s: make private: %w", dir, err)
	}
	return nil
}

// TraversableDirMode is the mode of berth's state directory and of its
// userns directory: root-only but for traversal (x for group and others), so that a pod's root in a user
// namespace, an unprivileged id on the host, can reach its containers'
// root filesystems under <state>/userns (each pod's directory there is
// root:<the pod's root gid> 0710). Every other entry of the state
// directory is root-only, its sockets 0660.
const TraversableDirMode os.FileMode = 0o711

// MkdirTraversable creates dir (and missing parents) with
// TraversableDirMode, and sets that mode when it exists with another.
func MkdirTraversable(dir string) error {
	if err := os.MkdirAll(dir, TraversableDirMode); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("directory %s: not a directory (%v)", dir, info.Mode().Type())
	}
	if info.Mode().Perm() == TraversableDirMode {
		return nil
	}
	if err := os.Chmod(dir, TraversableDirMode); err != nil {
		return fmt.Errorf("directory %s: mode %o: %w", dir, TraversableDirMode, err)
	}
	return nil
}
