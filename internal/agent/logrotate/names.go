package logrotate

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stampFormat is the rotated files' stamp (the kubelet's): names sort as
// their times do.
const stampFormat = "20060102-150405"

const (
	gzSuffix  = ".gz"
	tmpSuffix = ".tmp"
)

// stamp is the suffix of a log rotated at t.
func stamp(t time.Time) string { return t.UTC().Format(stampFormat) }

// rotatedName is what a name in the log's directory is to the log named
// base: a rotated file (stamp, compressed or not), a compression's
// leftover (tmp) or none of them (ok false: not ours, left alone).
type rotatedName struct {
	name       string
	stamp      string
	compressed bool
	tmp        bool
}

func parseName(base, name string) (rotatedName, bool) {
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok {
		return rotatedName{}, false
	}
	n := rotatedName{name: name}
	switch {
	case strings.HasSuffix(rest, gzSuffix):
		rest, n.compressed = strings.TrimSuffix(rest, gzSuffix), true
	case strings.HasSuffix(rest, tmpSuffix):
		rest, n.tmp = strings.TrimSuffix(rest, tmpSuffix), true
	}
	if _, err := time.Parse(stampFormat, rest); err != nil {
		return rotatedName{}, false
	}
	n.stamp = rest
	return n, true
}

// rotation is one rotated log: its plain and compressed files (one or
// both exist).
type rotation struct {
	stamp          string
	plain, gz, tmp bool
}

// rotations groups the names of the directory that belong to the log
// named base by stamp, oldest first.
func rotations(base string, names []string) []rotation {
	byStamp := map[string]*rotation{}
	for _, name := range names {
		n, ok := parseName(base, name)
		if !ok {
			continue
		}
		r := byStamp[n.stamp]
		if r == nil {
			r = &rotation{stamp: n.stamp}
			byStamp[n.stamp] = r
		}
		switch {
		case n.tmp:
			r.tmp = true
		case n.compressed:
			r.gz = true
		default:
			r.plain = true
		}
	}
	out := make([]rotation, 0, len(byStamp))
	for _, r := range byStamp {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].stamp < out[j].stamp })
	return out
}

// RotatedFiles lists the rotated files of the log at path, oldest first:
// "<path>.<stamp>" or, when only it exists, "<path>.<stamp>.gz". The
// current log is not in the list.
func RotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("rotated logs of %s: %w", path, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var files []string
	for _, r := range rotations(base, names) {
		switch {
		case r.plain:
			files = append(files, path+"."+r.stamp)
		case r.gz:
			files = append(files, path+"."+r.stamp+gzSuffix)
		}
	}
	return files, nil
}

// OpenRotated opens a file RotatedFiles named and reads it uncompressed.
// A plain file compressed meanwhile is read from its ".gz".
func OpenRotated(file string) (io.ReadCloser, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(file, gzSuffix) {
		file += gzSuffix
		f, err = os.Open(file)
	}
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(file, gzSuffix) {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return gzipFile{zr, f}, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	g.Reader.Close()
	return g.f.Close()
}

// OpenLog opens the log at path (absolute, beneath root) for reading, on
// a descriptor of its directory opened beneath root without following
// symlinks: what a container that can write the log directory planted
// there (a link to a host file, a FIFO) is refused, never read.
func OpenLog(root, path string) (*os.File, error) {
	dir, base, err := openLogOf(root, path)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	f, err := dir.open(base, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file: left alone", path)
	}
	return f, nil
}

// RemoveLog removes the log at path (absolute, beneath root) and its
// rotated files, when its container goes, on a descriptor of its
// directory opened beneath root without following symlinks. A directory
// or file already gone is no error.
func RemoveLog(root, path string) error {
	dir, base, err := openLogOf(root, path)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	names, err := dir.names()
	if err != nil {
		return err
	}
	errs := []error{dir.remove(base)}
	for _, name := range names {
		if _, ok := parseName(base, name); ok {
			errs = append(errs, dir.remove(name))
		}
	}
	return errors.Join(errs...)
}

// gzipHeader is the header of the compressed copy of the rotated file
// name that st describes: its name, as gzip does, and in the comment its
// inode, size and modification time, so that a reader holding the plain
// file open (berth logs -f) knows the compressed copy of that file.
func gzipHeader(name string, st *unix.Stat_t) gzip.Header {
	comment := fmt.Sprintf(sourceComment, st.Ino, st.Size, st.Mtim.Nano())
	return gzip.Header{Name: name, Comment: comment, OS: 3}
}

const sourceComment = "berth rotated log: inode %d size %d mtime %d"

// Source identifies the plain file a rotated file is or was compressed
// from.
type Source struct {
	Ino uint64
	// Size and ModTime (ns) are the source's when it was compressed; zero
	// for a plain file, which is known by its inode alone.
	Size, ModTime int64
}

// Is reports whether st, of a file held open, describes the source. A
// compressed file's inode alone does not tell: its source is gone, and
// the number may be another file's now.
func (s Source) Is(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Ino != s.Ino {
		return false
	}
	return s.ModTime == 0 || (st.Size() == s.Size && st.ModTime().UnixNano() == s.ModTime)
}

// RotatedSource is the source of a rotated file: the file itself, or
// the one a ".gz" berth compressed records (a plain file compressed
// meanwhile is known by its ".gz", as OpenRotated reads it); ok is false
// when it cannot tell (gone, or compressed by something else).
func RotatedSource(file string) (src Source, ok bool) {
	if !strings.HasSuffix(file, gzSuffix) {
		var st unix.Stat_t
		err := unix.Stat(file, &st)
		if errors.Is(err, unix.ENOENT) {
			return RotatedSource(file + gzSuffix)
		}
		if err != nil {
			return Source{}, false
		}
		return Source{Ino: st.Ino}, true
	}
	f, err := os.Open(file)
	if err != nil {
		return Source{}, false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return Source{}, false
	}
	_, err = fmt.Sscanf(zr.Header.Comment, sourceComment, &src.Ino, &src.Size, &src.ModTime)
	return src, err == nil && src.ModTime != 0
}
