package podcopy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"

	"golang.org/x/sys/unix"
)

// Owner says which owner a copied entry gets.
type Owner int

const (
	// OwnerCopier leaves the owner to the copying process (root): what
	// comes out of a container to the host.
	OwnerCopier Owner = iota
	// OwnerPreserve gives each entry its source's uid and gid, as ids seen
	// beneath the destination root (kubectl cp's tar, extracting as root).
	OwnerPreserve
	// OwnerRoot gives each entry uid and gid 0 as seen beneath the
	// destination root (kubectl cp --no-preserve).
	OwnerRoot
)

// Options tune a copy.
type Options struct {
	Owner Owner
	// Perm is the mode bits kept of each source's (0: 07777, every
	// permission, set-id and sticky bit).
	Perm uint32
}

// Copy copies src beneath from to dst beneath to: a regular file, a
// directory with everything below it, or a symlink as a symlink. A file
// whose dst is an existing directory (symlinks to it resolved beneath to)
// lands inside it under its own name; a directory becomes, or is merged
// into, dst. See the package documentation for what is refused.
func Copy(from *Root, src string, to *Root, dst string, opts Options) error {
	if opts.Perm == 0 {
		opts.Perm = 0o7777
	}
	s, err := from.parentOf(src)
	if err != nil {
		return err
	}
	defer unix.Close(s.dir)
	var st unix.Stat_t
	if err := unix.Fstatat(s.dir, s.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: %s: %w", from.name, s.path, err)
	}
	d, err := to.destination(dst, st.Mode&unix.S_IFMT == unix.S_IFDIR, s.name)
	if err != nil {
		return err
	}
	defer unix.Close(d.dir)
	c := copier{from: from, to: to, opts: opts}
	return c.copyEntry(s, d, &st)
}

// destination is the entry a source named base is copied to: inside dst
// when dst is a directory and the source is not, else dst itself.
func (r *Root) destination(dst string, srcIsDir bool, base string) (entry, error) {
	if !srcIsDir {
		fd, err := r.openat2(dst, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			return entry{dir: fd, name: base, path: path.Join("/", dst, base)}, nil
		}
	}
	return r.parentOf(dst)
}

// copier copies one tree.
type copier struct {
	from, to *Root
	opts     Options
}

// copyEntry copies what s is (st: its lstat) to d.
func (c copier) copyEntry(s, d entry, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return c.copyFile(s, d, st)
	case unix.S_IFDIR:
		return c.copyDir(s, d, st)
	case unix.S_IFLNK:
		return c.copySymlink(s, d, st)
	}
	return fmt.Errorf("%s: %s: %s: refused (only regular files, directories and symlinks are copied)", c.from.name, s.path, kind(st.Mode))
}

func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return fmt.Sprintf("a file of type %#o", mode&unix.S_IFMT)
}

// copyFile copies a regular file's content, replacing what d names.
func (c copier) copyFile(s, d entry, st *unix.Stat_t) error {
	sfd, err := unix.Openat(s.dir, s.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", c.from.name, s.path, err)
	}
	src := os.NewFile(uintptr(sfd), s.path)
	defer src.Close()
	var now unix.Stat_t
	if err := unix.Fstat(sfd, &now); err != nil || now.Mode&unix.S_IFMT != unix.S_IFREG || now.Ino != st.Ino || now.Dev != st.Dev {
		return fmt.Errorf("%s: %s: changed while it was copied (stat: %v)", c.from.name, s.path, err)
	}
	if err := c.clear(d); err != nil {
		return err
	}
	dfd, err := unix.Openat(d.dir, d.name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: create %s: %w", c.to.name, d.path, err)
	}
	dstFile := os.NewFile(uintptr(dfd), d.path)
	defer dstFile.Close()
	if _, err := io.Copy(dstFile, src); err != nil {
		return fmt.Errorf("copy %s of %s to %s of %s: %w", s.path, c.from.name, d.path, c.to.name, err)
	}
	if err := c.setOwnerAndMode(dfd, d, st); err != nil {
		return err
	}
	if err := dstFile.Close(); err != nil {
		return fmt.Errorf("%s: write %s: %w", c.to.name, d.path, err)
	}
	return nil
}

// clear removes a non-directory d names, so that it is replaced rather
// than written through (a symlink there is never followed).
func (c copier) clear(d entry) error {
	err := unix.Unlinkat(d.dir, d.name, 0)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s: %s: is a directory, not replaced by a file", c.to.name, d.path)
	}
	return fmt.Errorf("%s: replace %s: %w", c.to.name, d.path, err)
}

// copyDir makes (or reuses) the directory d and copies every entry of s
// into it, in name order. A directory the copy made gets the source's
// owner and mode; an existing one keeps its own.
func (c copier) copyDir(s, d entry, st *unix.Stat_t) error {
	created := true
	if err := unix.Mkdirat(d.dir, d.name, 0o700); errors.Is(err, unix.EEXIST) {
		created = false
	} else if err != nil {
		return fmt.Errorf("%s: create directory %s: %w", c.to.name, d.path, err)
	}
	dfd, err := unix.Openat(d.dir, d.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: open directory %s (it exists and is not a directory?): %w", c.to.name, d.path, err)
	}
	defer unix.Close(dfd)
	sfd, err := unix.Openat(s.dir, s.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: open directory %s: %w", c.from.name, s.path, err)
	}
	defer unix.Close(sfd)
	names, err := readNames(sfd)
	if err != nil {
		return fmt.Errorf("%s: read directory %s: %w", c.from.name, s.path, err)
	}
	for _, name := range names {
		child := entry{dir: sfd, name: name, path: path.Join(s.path, name)}
		var cst unix.Stat_t
		if err := unix.Fstatat(sfd, name, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %s: %w", c.from.name, child.path, err)
		}
		if err := c.copyEntry(child, entry{dir: dfd, name: name, path: path.Join(d.path, name)}, &cst); err != nil {
			return err
		}
	}
	if !created {
		return nil
	}
	return c.setOwnerAndMode(dfd, d, st)
}

// readNames lists a directory's names, sorted, on a duplicate of fd.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// copySymlink makes d a symlink with s's target, which is never followed.
func (c copier) copySymlink(s, d entry, st *unix.Stat_t) error {
	target, err := readlinkat(s.dir, s.name)
	if err != nil {
		return fmt.Errorf("%s: read symlink %s: %w", c.from.name, s.path, err)
	}
	if err := c.clear(d); err != nil {
		return err
	}
	if err := unix.Symlinkat(target, d.dir, d.name); err != nil {
		return fmt.Errorf("%s: create symlink %s: %w", c.to.name, d.path, err)
	}
	uid, gid, change, err := c.owner(d, st)
	if err != nil || !change {
		return err
	}
	if err := unix.Fchownat(d.dir, d.name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: chown symlink %s: %w", c.to.name, d.path, err)
	}
	return nil
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// owner is the host uid and gid d gets, and whether to change it at all.
func (c copier) owner(d entry, st *unix.Stat_t) (uint32, uint32, bool, error) {
	var uid, gid uint32
	switch c.opts.Owner {
	case OwnerCopier:
		return 0, 0, false, nil
	case OwnerPreserve:
		uid, gid = st.Uid, st.Gid
	}
	hostUID, okU := c.to.uids.toHost(uid)
	hostGID, okG := c.to.gids.toHost(gid)
	if !okU || !okG {
		return 0, 0, false, fmt.Errorf("%s: chown %s: uid %d / gid %d has no id on the host (user namespace)", c.to.name, d.path, uid, gid)
	}
	return hostUID, hostGID, true, nil
}

// setOwnerAndMode gives a copied file or directory its owner, then its
// mode (a chown clears set-id bits).
func (c copier) setOwnerAndMode(fd int, d entry, st *unix.Stat_t) error {
	uid, gid, change, err := c.owner(d, st)
	if err != nil {
		return err
	}
	if change {
		if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
			return fmt.Errorf("%s: chown %s: %w", c.to.name, d.path, err)
		}
	}
	if err := unix.Fchmod(fd, st.Mode&c.opts.Perm&0o7777); err != nil {
		return fmt.Errorf("%s: chmod %s: %w", c.to.name, d.path, err)
	}
	return nil
}
