package volume

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// beneath is how every subPath lookup resolves from the volume's
// descriptor: never above it, through no symlink at all (resolveSubPath
// already followed the legitimate ones by name; one met now was planted
// in between), nor through a /proc magic link.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// maxLookupRetries bounds the retries of a lookup the kernel gave up on
// because of a concurrent rename (EAGAIN) or a signal (EINTR).
const maxLookupRetries = 16

// openSubPath opens the target of subPath inside the volume at volumePath
// and returns it as an O_PATH descriptor (a file or a directory), with its
// path by name for messages. Missing directories at the end are created
// with mkdirat and given the volume's mode with fchmod, as the kubelet
// does. Every step works on descriptors beneath the volume's, so a
// container that swaps a directory of the volume for a symlink while this
// runs makes it fail; it can never make it open, create or chmod anything
// outside the volume.
func openSubPath(volumePath, subPath string) (*os.File, string, error) {
	target, err := resolveSubPath(volumePath, subPath)
	if err != nil {
		return nil, "", err
	}
	return openTarget(target, subPath)
}

// openTarget does openSubPath's walk on descriptors for a resolved target.
func openTarget(target subPathTarget, subPath string) (*os.File, string, error) {
	name := target.path()
	fail := func(err error) (*os.File, string, error) {
		return nil, "", fmt.Errorf("subPath %q: %s: %w", subPath, name, err)
	}
	root, err := unix.Open(target.base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("open volume %s: %w", target.base, err))
	}
	defer unix.Close(root)
	flags := uint64(unix.O_PATH)
	if len(target.missing) > 0 {
		flags |= unix.O_DIRECTORY
	}
	fd, err := openat2Beneath(root, target.existing, flags)
	if err != nil {
		return fail(fmt.Errorf("open %s beneath the volume: %w", target.existing, err))
	}
	if len(target.missing) > 0 {
		if fd, err = makeDirsAt(root, fd, target.missing); err != nil {
			return fail(err)
		}
	}
	return os.NewFile(uintptr(fd), name), name, nil
}

// openat2Beneath opens rel from dirfd with the beneath rules; O_CLOEXEC is
// added.
func openat2Beneath(dirfd int, rel string, flags uint64) (int, error) {
	how := &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: beneath}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, rel, how)
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && try < maxLookupRetries {
			continue
		}
		if errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("a symlink appeared on the way (the volume changed while it was resolved): %w", err)
		}
		return fd, err
	}
}

// makeDirsAt creates the missing directories below the directory dirfd
// (which it takes over: it is closed on return) and returns a descriptor
// of the last one. Each is made with mkdirat and opened, without following
// symlinks, from its parent's descriptor; the ones made here get the mode
// of the volume (root) with fchmod, since mkdirat's is cut by the umask. A
// directory someone else made in between is used as it is.
func makeDirsAt(root, dirfd int, missing []string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		unix.Close(dirfd)
		return -1, fmt.Errorf("stat volume: %w", err)
	}
	perm := st.Mode & (0o777 | unix.S_ISGID)
	for _, part := range missing {
		if part == "" || part == "." {
			continue
		}
		made := true
		err := unix.Mkdirat(dirfd, part, perm&0o777)
		if errors.Is(err, unix.EEXIST) {
			made, err = false, nil
		}
		if err != nil {
			unix.Close(dirfd)
			return -1, fmt.Errorf("mkdir %s: %w", part, err)
		}
		child, err := openat2Beneath(dirfd, part, unix.O_RDONLY|unix.O_DIRECTORY)
		unix.Close(dirfd)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", part, err)
		}
		dirfd = child
		if !made {
			continue
		}
		if err := unix.Fchmod(dirfd, perm); err != nil {
			unix.Close(dirfd)
			return -1, fmt.Errorf("chmod %s: %w", part, err)
		}
	}
	return dirfd, nil
}
