package podcopy

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is a directory tree opened as a file descriptor; paths are resolved
// beneath it only.
type Root struct {
	fd   int
	name string // for errors: "container app of pod default/web", "host"
	// uids and gids map ids as seen beneath the root to host ids (a
	// user-namespaced container); nil: the same ids.
	uids, gids idMap
}

// OpenRoot opens the directory dir as a Root named name (in errors).
func OpenRoot(dir, name string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: open root %s: %w", name, dir, err)
	}
	return &Root{fd: fd, name: name}, nil
}

// Close closes the root's descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Name is the root's name in errors.
func (r *Root) Name() string { return r.name }

// OpenProcessRoot opens /proc/<pid>/root, the root filesystem of a
// container's process as it sees it. running must check, through the
// runtime, that the container still runs with this pid: it is called once
// a pidfd holds the process, and the process must still be alive once the
// root is open, so the pid cannot have been reused by another process in
// between.
func OpenProcessRoot(pid int, name string, running func() error) (*Root, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%s: no process (pid %d): is it running?", name, pid)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: open process %d: %w", name, pid, err)
	}
	defer unix.Close(pidfd)
	if err := running(); err != nil {
		return nil, fmt.Errorf("%s: process %d: %w", name, pid, err)
	}
	proc := "/proc/" + strconv.Itoa(pid)
	r, err := OpenRoot(proc+"/root", name)
	if err != nil {
		return nil, err
	}
	if r.uids, err = readIDMap(proc + "/uid_map"); err == nil {
		r.gids, err = readIDMap(proc + "/gid_map")
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: process %d: %w", name, pid, err)
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: process %d exited while its root was opened: %w", name, pid, err)
	}
	return r, nil
}

// resolveFlags keep every resolution beneath the root and refuse /proc's
// magic links.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// openat2 opens p beneath the root (symlinks resolved as if the root were
// "/", so they stay inside), retrying on EAGAIN (a concurrent rename).
func (r *Root) openat2(p string, flags uint64) (int, error) {
	how := &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolveFlags}
	for range 16 {
		fd, err := unix.Openat2(r.fd, relative(p), how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// relative is p as a path beneath a root ("." for the root itself).
func relative(p string) string {
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// entry is a name in a directory opened on a descriptor.
type entry struct {
	dir  int    // an O_PATH|O_DIRECTORY descriptor (owned by the caller)
	name string // one component, never "." or ".."
	path string // the full path beneath the root, for errors
}

// parentOf resolves the directory of p beneath the root and returns the
// entry of p's last component in it; the caller closes e.dir. The root
// itself has no parent: it is refused (copy its contents by name).
func (r *Root) parentOf(p string) (entry, error) {
	clean := path.Clean("/" + p)
	if clean == "/" {
		return entry{}, fmt.Errorf("%s: %s: the root itself cannot be copied; name a path in it", r.name, p)
	}
	dir, base := path.Split(clean)
	fd, err := r.openat2(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return entry{}, fmt.Errorf("%s: resolve %s: %w", r.name, dir, err)
	}
	return entry{dir: fd, name: base, path: clean}, nil
}
