package crilog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// beneath is how a log's path is resolved below its directory: no
// symlink, no magic link, nothing outside (what a container that can
// write the log directory plants there is never followed).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// logDirMode is the mode of the log directories the writer makes.
const logDirMode = 0o700

// openDir opens the pod's log directory dir (absolute), making it and its
// parents if missing. dir is the CRI client's (kubelet's
// /var/log/pods/<ns>_<name>_<uid>) and trusted up to its last component,
// which must not be a symlink.
func openDir(dir string) (*os.File, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("container log directory %q: not absolute", dir)
	}
	if err := os.MkdirAll(dir, logDirMode); err != nil {
		return nil, fmt.Errorf("container log directory %s: %w", dir, err)
	}
	// O_NOFOLLOW without O_DIRECTORY: a symlink is ELOOP (with it, ENOTDIR).
	// O_PATH: whatever is there is not opened (a device's driver never
	// runs); the descriptor serves the *at calls beneath it.
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("container log directory %s: %w", dir, linkError(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK { // O_PATH|O_NOFOLLOW holds the link itself
			return nil, fmt.Errorf("container log directory %s: %w", dir, linkError(unix.ELOOP))
		}
		return nil, fmt.Errorf("container log directory %s: not a directory (%v)", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// checkRel refuses a log path that is not a plain relative path.
func checkRel(rel string) error {
	if rel == "" || !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
		return fmt.Errorf("container log path %q: not a clean path relative to the log directory", rel)
	}
	return nil
}

// openBeneath opens (creating it, and the directories above it, if
// missing) the log rel beneath dir for appending. Nothing on the way may
// be a symlink; the log must be a regular file of one link. created says
// whether this call made the file.
func openBeneath(dir *os.File, rel string) (f *os.File, created bool, err error) {
	parent, err := parentOf(dir, rel)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(parent)
	name := filepath.Base(rel)
	flags := uint64(unix.O_WRONLY | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC)
	fd, err := openat2(parent, name, &unix.OpenHow{Flags: flags | unix.O_CREAT | unix.O_EXCL, Mode: 0o640, Resolve: beneath})
	created = err == nil
	if errors.Is(err, unix.EEXIST) {
		fd, err = openExisting(parent, name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("container log %s: %w", describe(dir, rel), linkError(err))
	}
	return os.NewFile(uintptr(fd), describe(dir, rel)), created, nil
}

// openExisting opens the log name beneath parent for appending only once
// it is known to be a regular file of one link: it is first opened
// O_PATH (a device or FIFO planted there is never opened, so no driver
// runs as root), checked, then opened again through that descriptor, and
// the open file must be the checked one.
func openExisting(parent int, name string) (int, error) {
	pfd, err := openat2(parent, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	var checked unix.Stat_t
	if err := checkLogFile(pfd, &checked); err != nil {
		return -1, err
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_WRONLY|unix.O_APPEND|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var opened unix.Stat_t
	if err := unix.Fstat(fd, &opened); err != nil || opened.Dev != checked.Dev || opened.Ino != checked.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("changed while it was opened: refused (%v)", err)
	}
	return fd, nil
}

// parentOf opens the directory holding rel's last component beneath dir,
// making each missing directory (mode 0700) with mkdirat on the one
// above it.
func parentOf(dir *os.File, rel string) (int, error) {
	cur, err := unix.Dup(int(dir.Fd()))
	if err != nil {
		return -1, fmt.Errorf("container log directory %s: %w", dir.Name(), err)
	}
	walked := dir.Name()
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		walked += "/" + part
		if err := unix.Mkdirat(cur, part, logDirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(cur)
			return -1, fmt.Errorf("container log directory %s: %w", walked, err)
		}
		next, err := openat2(cur, part, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("container log directory %s: %w", walked, linkError(err))
		}
		cur = next
	}
	return cur, nil
}

// checkLogFile refuses what is not a regular file of one link (a FIFO
// or device, or a hard link to some other file, planted by a container);
// st is the file's.
func checkLogFile(fd int, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK { // O_PATH|O_NOFOLLOW holds the link itself
		return linkError(unix.ELOOP)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("not a regular file (mode %#o): refused", st.Mode)
	}
	if st.Nlink > 1 {
		return fmt.Errorf("a regular file with %d links: refused", st.Nlink)
	}
	return nil
}

// removeBeneath removes rel beneath dir if it is still the file f.
func removeBeneath(dir *os.File, rel string, f *os.File) error {
	parent, err := parentOf(dir, rel)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	var held, now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		return fmt.Errorf("container log %s: %w", describe(dir, rel), err)
	}
	name := filepath.Base(rel)
	if err := unix.Fstatat(parent, name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil || now.Dev != held.Dev || now.Ino != held.Ino {
		return nil // gone or replaced meanwhile: not ours to remove
	}
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("container log %s: remove: %w", describe(dir, rel), err)
	}
	return nil
}

func openat2(dirfd int, name string, how *unix.OpenHow) (int, error) {
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, name, how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) || try >= 8 {
			return fd, err
		}
	}
}

// linkError says what ELOOP and EXDEV mean here.
func linkError(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: a symlink, not followed", err)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: leads outside the log directory, not followed", err)
	}
	return err
}

func describe(dir *os.File, rel string) string { return dir.Name() + "/" + rel }
