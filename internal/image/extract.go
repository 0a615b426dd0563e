package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

var errEscape = errors.New("path escapes layer root")

// unpackLayer decompresses the blob at blobPath, unpacks it into dst (an
// existing empty dir) and checks the uncompressed stream against diffID.
func unpackLayer(blobPath, dst, diffID string, u layerUnpack) error {
	return readLayer(blobPath, diffID, u, func(r io.Reader) error { return applyTar(r, dst, u.lim) })
}

// verifyDiffID decompresses the blob at blobPath only to check its diff id.
func verifyDiffID(blobPath, diffID string, u layerUnpack) error {
	u.space = nil // nothing is written
	return readLayer(blobPath, diffID, u, func(io.Reader) error { return nil })
}

// readLayer opens the blob, hands the uncompressed stream to consume, drains
// the rest and compares the stream's digest with diffID.
func readLayer(blobPath, diffID string, u layerUnpack, consume func(io.Reader) error) error {
	f, err := os.Open(blobPath)
	if err != nil {
		return fmt.Errorf("layer blob: %w", err)
	}
	defer f.Close()
	// The blob's size is a floor for what unpacking it writes.
	if fi, err := f.Stat(); err == nil {
		if err := u.space.ensure(fi.Size()); err != nil {
			return err
		}
	}
	stream, closeStream, err := decompress(f)
	if err != nil {
		return err
	}
	defer closeStream()
	h := sha256.New()
	r := io.TeeReader(u.meter(stream), h)
	if err := consume(r); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("layer stream: %w", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		return fmt.Errorf("layer diff id: got %s, config says %s: %w", got, diffID, errdefs.ErrInvalidArgument)
	}
	return nil
}

// decompress sniffs gzip and zstd magic; anything else is read as a plain tar.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("layer gzip header: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return zr, func() { zr.Close() }, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return nil, nil, fmt.Errorf("layer zstd header: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// boundedReader fails once more than limit bytes are read.
type boundedReader struct {
	r     io.Reader
	left  int64
	limit int64
}

func newBoundedReader(r io.Reader, limit int64) *boundedReader {
	return &boundedReader{r: r, left: limit, limit: limit}
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("stream: larger than %d bytes: %w", b.limit, errdefs.ErrInvalidArgument)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// extractor unpacks one tar stream beneath rootfd.
type extractor struct {
	rootfd  int
	lim     Limits
	isRoot  bool
	written int64
	dirs    []dirTimes // applied last: creating children changes a dir's mtime
}

type dirTimes struct {
	rel   string
	times []unix.Timespec
}

// applyTar unpacks the tar stream r into the existing directory dst. Every
// path is resolved beneath dst; the first bad entry fails the whole layer.
func applyTar(r io.Reader, dst string, lim Limits) error {
	rootfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("layer dir %s: %w", dst, err)
	}
	defer unix.Close(rootfd)
	x := &extractor{rootfd: rootfd, lim: lim, isRoot: os.Geteuid() == 0}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("layer tar: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		if n >= lim.MaxEntries {
			return fmt.Errorf("layer tar: more than %d entries (limit max_layer_entries): %w", lim.MaxEntries, errdefs.ErrInvalidArgument)
		}
		if err := x.apply(hdr, tr); err != nil {
			return fmt.Errorf("layer tar: entry %q: %w", hdr.Name, err)
		}
	}
	return x.finishDirs()
}

// cleanEntryName makes an archive name relative to the layer root. Absolute
// names are taken as relative to the root (as tar and containerd do); names
// that climb out with ".." are refused. The root itself is ".".
func cleanEntryName(name string) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("empty or NUL name: %w", errdefs.ErrInvalidArgument)
	}
	n := path.Clean(name)
	if n == ".." || strings.HasPrefix(n, "../") {
		return "", fmt.Errorf("%w: %w", errEscape, errdefs.ErrInvalidArgument)
	}
	n = strings.TrimLeft(n, "/")
	if n == "" {
		n = "."
	}
	return n, nil
}

// splitRel splits a cleaned relative name into parent ("." for the root) and base.
func splitRel(rel string) (string, string) {
	parent, base := path.Split(rel)
	parent = strings.TrimSuffix(parent, "/")
	if parent == "" {
		parent = "."
	}
	return parent, base
}

var resolveBeneath = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens the directory rel with every symlink resolved as if
// the layer dir were "/", so no lookup can leave it.
func (x *extractor) openBeneath(rel string) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: uint64(resolveBeneath),
	}
	for {
		fd, err := unix.Openat2(x.rootfd, rel, how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// openParent opens the directory rel, creating missing components (0755,
// like tar) one at a time, each beneath the layer root.
func (x *extractor) openParent(rel string) (int, error) {
	fd, err := x.openBeneath(rel)
	if !errors.Is(err, unix.ENOENT) {
		if err != nil {
			return -1, fmt.Errorf("parent dir %q: %w", rel, err)
		}
		return fd, nil
	}
	cur := "."
	for _, comp := range strings.Split(rel, "/") {
		pfd, err := x.openBeneath(cur)
		if err != nil {
			return -1, fmt.Errorf("parent dir %q: %w", cur, err)
		}
		err = unix.Mkdirat(pfd, comp, 0o755)
		unix.Close(pfd)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("parent dir %q: mkdir %q: %w", cur, comp, err)
		}
		cur = path.Join(cur, comp)
	}
	fd, err = x.openBeneath(rel)
	if err != nil {
		return -1, fmt.Errorf("parent dir %q: %w", rel, err)
	}
	return fd, nil
}

// finishDirs sets directory times, deepest last-created first. A dir that
// a later entry replaced was dropped from the list (forgetDirs); one that
// no longer resolves to a directory any other way (reached through a
// symlink that was replaced) is skipped: times never land on another entry.
func (x *extractor) finishDirs() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		parent, base := splitRel(d.rel)
		if d.rel == "." {
			parent, base = ".", "."
		}
		pfd, err := x.openBeneath(parent)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("dir %q: times: %w", d.rel, err)
		}
		err = setDirTimes(pfd, base, d.times)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("dir %q: times: %w", d.rel, err)
		}
	}
	return nil
}

// setDirTimes sets the times of name in pfd if it is still a directory.
func setDirTimes(pfd int, name string, times []unix.Timespec) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return unix.UtimesNanoAt(pfd, name, times, unix.AT_SYMLINK_NOFOLLOW)
}
