package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

const (
	whiteoutPrefix     = ".wh."
	whiteoutMetaPrefix = ".wh..wh."
	whiteoutOpaqueDir  = ".wh..wh..opq"
	overlayOpaqueXattr = "trusted.overlay.opaque"
	paxXattrPrefix     = "SCHILY.xattr."
)

// apply unpacks one entry. Device nodes: character and block devices are
// created only when running as root (as containerd does outside a user
// namespace) and skipped otherwise; fifos are always created. Whiteouts
// become overlayfs whiteouts (0/0 char devices, opaque xattr), which needs root.
func (x *extractor) apply(hdr *tar.Header, r io.Reader) error {
	rel, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if hdr.Size < 0 || hdr.Size > x.lim.MaxEntrySize {
		return fmt.Errorf("size %d: over the %d byte limit (max_file_size): %w", hdr.Size, x.lim.MaxEntrySize, errdefs.ErrInvalidArgument)
	}
	if x.written += hdr.Size; x.written > x.lim.MaxLayerSize {
		return fmt.Errorf("layer content: over the %d byte limit (max_layer_size): %w", x.lim.MaxLayerSize, errdefs.ErrInvalidArgument)
	}
	parent, base := splitRel(rel)
	if rel == "." {
		if hdr.Typeflag != tar.TypeDir {
			return nil // only a directory can describe the root
		}
		return x.applyMeta(x.rootfd, ".", hdr, true)
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		return x.whiteout(parent, base)
	}
	pfd, err := x.openParent(parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(pfd, rel, base, hdr)
	case tar.TypeReg, tar.TypeGNUSparse: // the reader turns legacy TypeRegA into TypeReg or TypeDir
		return x.writeFile(pfd, rel, base, hdr, r)
	case tar.TypeSymlink:
		return x.symlink(pfd, rel, base, hdr)
	case tar.TypeLink:
		return x.hardlink(pfd, rel, base, hdr)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return x.mknod(pfd, rel, base, hdr)
	case tar.TypeXGlobalHeader:
		return nil
	}
	return fmt.Errorf("tar type %q: unsupported: %w", hdr.Typeflag, errdefs.ErrInvalidArgument)
}

// removeExisting clears name (the entry rel) in dir so a new entry can
// take its place; an existing directory is kept when keepDir (tar merges
// directories). A removed directory's pending times are dropped with it:
// the last entry wins, and what replaced the tree must not get its times.
func (x *extractor) removeExisting(pfd int, rel, name string, keepDir bool) (kept bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return false, nil
		}
		return false, fmt.Errorf("existing %q: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(pfd, name, 0); err != nil {
			return false, fmt.Errorf("existing %q: unlink: %w", name, err)
		}
		return false, nil
	}
	if keepDir {
		return true, nil
	}
	// RemoveAll works with *at calls beneath the parent it opens and
	// never follows symlinks inside the tree.
	if err := os.RemoveAll("/proc/self/fd/" + strconv.Itoa(pfd) + "/" + name); err != nil {
		return false, fmt.Errorf("existing dir %q: %w", name, err)
	}
	x.forgetDirs(rel)
	return false, nil
}

// forgetDirs drops the pending times of rel and of every dir beneath it.
func (x *extractor) forgetDirs(rel string) {
	x.dirs = slices.DeleteFunc(x.dirs, func(d dirTimes) bool {
		return d.rel == rel || strings.HasPrefix(d.rel, rel+"/")
	})
}

func (x *extractor) mkdir(pfd int, rel, base string, hdr *tar.Header) error {
	kept, err := x.removeExisting(pfd, rel, base, true)
	if err != nil {
		return err
	}
	if !kept {
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
			return fmt.Errorf("mkdir: %w", err)
		}
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	defer unix.Close(fd)
	if err := x.applyMeta(fd, rel, hdr, true); err != nil {
		return err
	}
	return nil
}

func (x *extractor) writeFile(pfd int, rel, base string, hdr *tar.Header, r io.Reader) error {
	if _, err := x.removeExisting(pfd, rel, base, false); err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	if n, err := io.CopyN(f, r, hdr.Size); err != nil {
		return fmt.Errorf("content at byte %d: %w", n, err)
	}
	if err := x.applyMeta(fd, "", hdr, false); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, entryTimes(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

func (x *extractor) symlink(pfd int, rel, base string, hdr *tar.Header) error {
	if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
		return fmt.Errorf("symlink target: empty or NUL: %w", errdefs.ErrInvalidArgument)
	}
	if _, err := x.removeExisting(pfd, rel, base, false); err != nil {
		return err
	}
	if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
		return fmt.Errorf("symlink: %w", err)
	}
	if err := x.chownAt(pfd, base, hdr); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, entryTimes(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

// hardlink links to an earlier entry of this layer, looked up beneath the
// layer root; the target's last component is not followed.
func (x *extractor) hardlink(pfd int, rel, base string, hdr *tar.Header) error {
	target, err := cleanEntryName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	if target == rel {
		return nil
	}
	if target == "." {
		return fmt.Errorf("hard link target %q: is the root: %w", hdr.Linkname, errdefs.ErrInvalidArgument)
	}
	tparent, tbase := splitRel(target)
	tpfd, err := x.openBeneath(tparent)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	defer unix.Close(tpfd)
	var st unix.Stat_t
	if err := unix.Fstatat(tpfd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("hard link target %q: is a directory: %w", hdr.Linkname, errdefs.ErrInvalidArgument)
	}
	if _, err := x.removeExisting(pfd, rel, base, false); err != nil {
		return err
	}
	if err := unix.Linkat(tpfd, tbase, pfd, base, 0); err != nil {
		return fmt.Errorf("hard link: %w", err)
	}
	return nil
}

func (x *extractor) mknod(pfd int, rel, base string, hdr *tar.Header) error {
	mode := uint32(unix.S_IFIFO)
	switch hdr.Typeflag {
	case tar.TypeChar:
		mode = unix.S_IFCHR
	case tar.TypeBlock:
		mode = unix.S_IFBLK
	}
	if mode != unix.S_IFIFO && !x.isRoot {
		return nil // device nodes need root; skipped like containerd in a user namespace
	}
	if _, err := x.removeExisting(pfd, rel, base, false); err != nil {
		return err
	}
	dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
	if err := unix.Mknodat(pfd, base, mode|0o600, int(dev)); err != nil {
		return fmt.Errorf("mknod: %w", err)
	}
	if err := x.chownAt(pfd, base, hdr); err != nil {
		return err
	}
	if err := unix.Fchmodat(pfd, base, uint32(hdr.Mode)&0o7777, 0); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return unix.UtimesNanoAt(pfd, base, entryTimes(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

// whiteout records the deletion of a lower-layer path the way overlayfs
// reads it: ".wh.<name>" → 0/0 char device <name>; ".wh..wh..opq" → the
// opaque xattr on the parent dir. Other ".wh..wh." meta entries are ignored.
func (x *extractor) whiteout(parent, base string) error {
	if base != whiteoutOpaqueDir && strings.HasPrefix(base, whiteoutMetaPrefix) {
		return nil
	}
	if !x.isRoot {
		return fmt.Errorf("whiteout: overlay whiteouts need root: %w", errdefs.ErrFailedPrecondition)
	}
	pfd, err := x.openParent(parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if base == whiteoutOpaqueDir {
		if err := unix.Fsetxattr(pfd, overlayOpaqueXattr, []byte("y"), 0); err != nil {
			return fmt.Errorf("opaque dir %q: %w", parent, err)
		}
		return nil
	}
	name := strings.TrimPrefix(base, whiteoutPrefix)
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("whiteout of %q: %w", name, errdefs.ErrInvalidArgument)
	}
	if _, err := x.removeExisting(pfd, path.Join(parent, name), name, false); err != nil {
		return err
	}
	if err := unix.Mknodat(pfd, name, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("whiteout %q: mknod: %w", name, err)
	}
	return nil
}

// applyMeta sets owner, mode and xattrs through fd; directory times are
// deferred until the layer is complete.
func (x *extractor) applyMeta(fd int, rel string, hdr *tar.Header, isDir bool) error {
	if x.isRoot {
		uid, gid, err := entryOwner(hdr)
		if err != nil {
			return err
		}
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(fd, uint32(hdr.Mode)&0o7777); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := x.setXattrs(fd, hdr); err != nil {
		return err
	}
	if isDir {
		x.dirs = append(x.dirs, dirTimes{rel: rel, times: entryTimes(hdr)})
	}
	return nil
}

// setXattrs copies the entry's xattrs. Overlay's own trusted.overlay.* and
// user.overlay.* attributes are never taken from an archive: they would
// let a layer forge whiteouts, redirects or metacopy.
func (x *extractor) setXattrs(fd int, hdr *tar.Header) error {
	for key, val := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(key, paxXattrPrefix)
		if !ok || strings.HasPrefix(attr, "trusted.overlay.") || strings.HasPrefix(attr, "user.overlay.") {
			continue
		}
		err := unix.Fsetxattr(fd, attr, []byte(val), 0)
		if errors.Is(err, unix.ENOTSUP) || (errors.Is(err, unix.EPERM) && !x.isRoot) {
			continue
		}
		if err != nil {
			return fmt.Errorf("xattr %q: %w", attr, err)
		}
	}
	return nil
}

func (x *extractor) chownAt(pfd int, base string, hdr *tar.Header) error {
	if !x.isRoot {
		return nil
	}
	uid, gid, err := entryOwner(hdr)
	if err != nil {
		return err
	}
	if err := unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	return nil
}

func entryOwner(hdr *tar.Header) (int, int, error) {
	const maxID = 1<<32 - 2
	if hdr.Uid < 0 || hdr.Gid < 0 || hdr.Uid > maxID || hdr.Gid > maxID {
		return 0, 0, fmt.Errorf("owner %d:%d: out of range: %w", hdr.Uid, hdr.Gid, errdefs.ErrInvalidArgument)
	}
	return hdr.Uid, hdr.Gid, nil
}

// entryTimes returns atime and mtime; a missing atime is the mtime and
// times before the epoch are clamped to it.
func entryTimes(hdr *tar.Header) []unix.Timespec {
	mtime := hdr.ModTime
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = mtime
	}
	return []unix.Timespec{toTimespec(atime), toTimespec(mtime)}
}

func toTimespec(t time.Time) unix.Timespec {
	if t.Before(time.Unix(0, 0)) {
		return unix.Timespec{}
	}
	return unix.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}
