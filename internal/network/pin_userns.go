package network

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/userns"
)

// pinFromHolder pins a user namespace and the namespaces it owns: a Go
// process cannot unshare a user namespace (it is multithreaded), so a
// holder child is cloned into all of them, its namespace files are bind
// mounted onto the pins, and it is killed. The hostname is set from a
// spare thread that joins the new UTS namespace (the host's root holds
// every capability in a user namespace it made).
func pinFromHolder(opts PinOptions, kinds []pinKind) error {
	var flags uintptr
	for _, k := range kinds {
		if k.name != "user" {
			flags |= uintptr(k.flag)
		}
	}
	h, err := userns.StartHolder(opts.Holder, flags, *opts.User)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, k := range kinds {
		dst := filepath.Join(opts.Dir, k.name)
		if err := unix.Mount(h.NSPath(k.name), dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("pin %s: bind mount: %w", k.name, err)
		}
		if afterPinMountHook != nil {
			if err := afterPinMountHook(k.name); err != nil {
				return fmt.Errorf("pin %s: %w", k.name, err)
			}
		}
	}
	if opts.Hostname == "" {
		return nil
	}
	onSpareThread(func() bool { err = setHostnameIn(filepath.Join(opts.Dir, "uts"), opts.Hostname); return false })
	return err
}

// setHostnameIn moves the calling (spare, locked) thread into the UTS
// namespace pinned at path and sets the hostname there.
func setHostnameIn(path, hostname string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("hostname %q: %w", hostname, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("hostname %q: join uts namespace: %w", hostname, err)
	}
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("hostname %q: %w", hostname, err)
	}
	return nil
}
