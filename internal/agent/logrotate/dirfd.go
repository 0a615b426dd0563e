package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// logDir is a container's log directory, opened beneath the pods' log
// root: every operation names a file in it, never a path.
type logDir struct {
	f    *os.File
	path string // for messages
}

// openLogDir opens rel (a directory path relative to root) beneath root,
// following no symlink.
func openLogDir(root, rel string) (*logDir, error) {
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pod log root %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for try := 0; ; try++ {
		fd, err = unix.Openat2(rootFD, rel, how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) || try >= 8 {
			break
		}
	}
	path := root + "/" + rel
	if err != nil {
		return nil, fmt.Errorf("log directory %s: %w", path, err)
	}
	return &logDir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// openLogOf opens the directory of the log at path (absolute, beneath
// root) as openLogDir does, and returns it with the log's name.
func openLogOf(root, path string) (*logDir, string, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) || !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("log %q: not beneath the pod log root %s: left alone", path, root)
	}
	dir, err := openLogDir(root, filepath.Dir(rel))
	if err != nil {
		return nil, "", err
	}
	return dir, filepath.Base(rel), nil
}

func (d *logDir) Close() error { return d.f.Close() }

func (d *logDir) fd() int { return int(d.f.Fd()) }

// names lists the directory.
func (d *logDir) names() ([]string, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("log directory %s: %w", d.path, err)
	}
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("log directory %s: %w", d.path, err)
	}
	return names, nil
}

// size is the size of the regular file name; exists false when there is
// none.
func (d *logDir) size(name string) (size int64, exists bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s/%s: %w", d.path, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, true, fmt.Errorf("%s/%s: not a regular file (mode %#o): left alone", d.path, name, st.Mode)
	}
	return st.Size, true, nil
}

// rename renames from to to, never replacing a file.
func (d *logDir) rename(from, to string) error {
	if err := unix.Renameat2(d.fd(), from, d.fd(), to, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("rename %s/%s to %s: %w", d.path, from, to, err)
	}
	return nil
}

// remove removes the file name; one already gone is no error.
func (d *logDir) remove(name string) error {
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s/%s: %w", d.path, name, err)
	}
	return nil
}

// open opens the file name with flags, following no symlink.
func (d *logDir) open(name string, flags int, mode uint32) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s: %w", d.path, name, err)
	}
	return os.NewFile(uintptr(fd), d.path+"/"+name), nil
}

// compress writes name gzip-compressed to name.tmp, renames that to
// name.gz and removes name. When ctx ends, or name was removed meanwhile
// (a round removed it as beyond the files kept), it leaves nothing.
func (d *logDir) compress(ctx context.Context, name string) error {
	// O_NONBLOCK: a FIFO of that name does not hold the open; it is then
	// refused, as anything not a regular file is.
	src, err := d.open(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return fmt.Errorf("compress %s/%s: %w", d.path, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("compress %s/%s: not a regular file (mode %#o): left alone", d.path, name, st.Mode)
	}
	return d.compressOpen(ctx, src, &st, name)
}

// compressOpen compresses src, the file st describes, opened as name.
func (d *logDir) compressOpen(ctx context.Context, src io.Reader, st *unix.Stat_t, name string) error {
	tmp := name + tmpSuffix
	if err := d.writeGzip(ctx, src, tmp, gzipHeader(name, st)); err != nil {
		_ = d.remove(tmp) // the error below says what failed
		return fmt.Errorf("compress %s/%s: %w", d.path, name, err)
	}
	if !d.holds(name, st) {
		return d.remove(tmp) // removed meanwhile: its lines are not kept
	}
	if err := d.rename(tmp, name+gzSuffix); err != nil {
		_ = d.remove(tmp) // as above
		return err
	}
	return d.remove(name)
}

// writeGzip writes src gzip-compressed, with header h, to a new file
// name, synced.
func (d *logDir) writeGzip(ctx context.Context, src io.Reader, name string, h gzip.Header) error {
	dst, err := d.open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(dst)
	zw.Header = h
	_, err = io.Copy(zw, ctxReader{ctx, src})
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// holds reports whether name is still the file st describes.
func (d *logDir) holds(name string, st *unix.Stat_t) bool {
	var now unix.Stat_t
	err := unix.Fstatat(d.fd(), name, &now, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && now.Dev == st.Dev && now.Ino == st.Ino
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
