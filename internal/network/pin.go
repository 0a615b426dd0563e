package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/userns"
)

// Namespaces holds the pinned namespace files of a pod; "" when not pinned.
type Namespaces struct {
	Net, IPC, UTS string
	// User is the pod's user namespace (PinOptions.User), which owns the
	// others.
	User string
}

// PinOptions says which namespaces to create and where to pin them.
type PinOptions struct {
	Dir      string // created 0700; holds the files net, ipc, uts
	Net      bool
	IPC      bool
	UTS      bool
	Hostname string // set inside the new UTS namespace; needs UTS
	// User, when set, pins a new user namespace with this mapping too,
	// and makes the other namespaces inside it so that it owns them (a
	// pod's root may then set its sysctls, mount its sysfs, bind its low
	// ports). Holder is what its holder process runs (userns.StartHolder).
	User   *userns.Mapping
	Holder []string
}

// nsfsMagic is the statfs type of namespace files (NSFS_MAGIC).
const nsfsMagic = 0x6e736673

// maxHostnameLen is the kernel's limit for sethostname (HOST_NAME_MAX).
const maxHostnameLen = 64

// pinKind is one namespace that can be pinned.
type pinKind struct {
	name string // file name under Dir and under /proc/.../ns
	flag int    // clone flag
}

var pinKinds = []pinKind{
	{"user", unix.CLONE_NEWUSER},
	{"net", unix.CLONE_NEWNET},
	{"ipc", unix.CLONE_NEWIPC},
	{"uts", unix.CLONE_NEWUTS},
}

// afterPinMountHook, when set by tests, runs after each bind mount and can
// fail the pin midway.
var afterPinMountHook func(kind string) error

// Pin creates the asked namespaces and pins them under opts.Dir. Any failure
// undoes everything it did.
func Pin(opts PinOptions) (ns *Namespaces, err error) {
	kinds, err := validatePin(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(opts.Dir), 0o755); err != nil {
		return nil, fmt.Errorf("namespace pins %s: parent directory: %w", opts.Dir, err)
	}
	if err := os.Mkdir(opts.Dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("namespace pins %s: %w", opts.Dir, errdefs.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("namespace pins %s: directory: %w", opts.Dir, err)
	}
	defer func() {
		if err != nil {
			_ = Unpin(opts.Dir)
		}
	}()
	ns = &Namespaces{}
	for _, k := range kinds {
		p := filepath.Join(opts.Dir, k.name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o400)
		if err != nil {
			return nil, fmt.Errorf("namespace pin %s: file: %w", p, err)
		}
		f.Close()
		ns.set(k.name, p)
	}
	if len(kinds) == 0 {
		return ns, nil
	}
	if opts.User != nil {
		err = pinFromHolder(opts, kinds)
	} else {
		onSpareThread(func() bool { err = unshareAndPin(opts, kinds); return false })
	}
	if err != nil {
		return nil, fmt.Errorf("namespace pins %s: %w", opts.Dir, err)
	}
	return ns, nil
}

func (n *Namespaces) set(kind, path string) {
	switch kind {
	case "net":
		n.Net = path
	case "ipc":
		n.IPC = path
	case "uts":
		n.UTS = path
	case "user":
		n.User = path
	}
}

func validatePin(opts PinOptions) ([]pinKind, error) {
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("namespace pins: dir %q: not an absolute path: %w", opts.Dir, errdefs.ErrInvalidArgument)
	}
	if opts.Hostname != "" && !opts.UTS {
		return nil, fmt.Errorf("namespace pins: hostname %q: needs a new UTS namespace: %w", opts.Hostname, errdefs.ErrInvalidArgument)
	}
	if opts.User != nil && len(opts.Holder) == 0 {
		return nil, fmt.Errorf("namespace pins: user namespace: no holder executable: %w", errdefs.ErrInvalidArgument)
	}
	if len(opts.Hostname) > maxHostnameLen {
		return nil, fmt.Errorf("namespace pins: hostname %q: longer than %d bytes: %w", opts.Hostname, maxHostnameLen, errdefs.ErrInvalidArgument)
	}
	var kinds []pinKind
	for _, k := range pinKinds {
		if (k.name == "user" && opts.User != nil) || (k.name == "net" && opts.Net) || (k.name == "ipc" && opts.IPC) || (k.name == "uts" && opts.UTS) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// unshareAndPin runs on a spare locked thread (onSpareThread) that is never
// unlocked: once the thread has left the host namespaces it must die with
// its goroutine instead of going back to Go's pool.
func unshareAndPin(opts PinOptions, kinds []pinKind) error {
	flags := 0
	for _, k := range kinds {
		flags |= k.flag
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if opts.Hostname != "" {
		if err := unix.Sethostname([]byte(opts.Hostname)); err != nil {
			return fmt.Errorf("hostname %q: %w", opts.Hostname, err)
		}
	}
	tid := strconv.Itoa(unix.Gettid())
	for _, k := range kinds {
		src := filepath.Join("/proc/self/task", tid, "ns", k.name)
		dst := filepath.Join(opts.Dir, k.name)
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("pin %s: bind mount: %w", k.name, err)
		}
		if afterPinMountHook != nil {
			if err := afterPinMountHook(k.name); err != nil {
				return fmt.Errorf("pin %s: %w", k.name, err)
			}
		}
	}
	return nil
}

// Unpin unmounts and removes each pin under dir, then dir itself. It is
// idempotent: missing pins and a missing dir are not errors.
func Unpin(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("namespace pins: dir %q: not an absolute path: %w", dir, errdefs.ErrInvalidArgument)
	}
	var errs []error
	for _, k := range pinKinds {
		if err := UnpinOne(filepath.Join(dir, k.name)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("namespace pins %s: remove: %w", dir, err)
	}
	return nil
}

// UnpinOne unmounts and removes the one pin at path (a pod's net pin at its
// stop: its namespace then goes with its last user). Idempotent.
func UnpinOne(path string) error {
	if path == "" || !filepath.IsAbs(path) {
		return fmt.Errorf("namespace pin %q: not an absolute path: %w", path, errdefs.ErrInvalidArgument)
	}
	if err := unmountAll(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("namespace pin %s: remove: %w", path, err)
	}
	return nil
}

// unmountAll detaches every mount stacked on path.
func unmountAll(path string) error {
	for i := 0; i < 16; i++ {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not a mount point (any more), or gone
		default:
			return fmt.Errorf("namespace pin %s: unmount: %w", path, err)
		}
	}
	return fmt.Errorf("namespace pin %s: unmount: still mounted after 16 detaches", path)
}

// IsPinned reports whether path is a live namespace file (an nsfs mount).
func IsPinned(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return int64(st.Type) == nsfsMagic
}
