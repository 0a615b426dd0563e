package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxArchiveSize bounds the bytes staged from one import archive.
const maxArchiveSize = 256 << 30

// sourceDir returns a directory holding the import input: path itself when
// it is a directory, otherwise the tar (optionally gzipped) unpacked flat
// into stage. Only regular files and directories are written; symlinks
// (older `docker save` links shared layer.tar files) become hard links to
// the regular file they name, so no symlink ever exists on disk.
func sourceDir(path, stage string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("import source %q: %w", path, errdefs.ErrNotFound)
	}
	if fi.IsDir() {
		return path, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("import source %q: %w", path, err)
	}
	defer f.Close()
	dir := filepath.Join(stage, "src")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("import source %q: %w", path, err)
	}
	if err := untarFlat(f, dir); err != nil {
		return "", fmt.Errorf("import source %q: %w", path, err)
	}
	return dir, nil
}

func untarFlat(r io.Reader, dir string) error {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("archive gzip: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		defer zr.Close()
		in = zr
	}
	tr := tar.NewReader(newBoundedReader(in, maxArchiveSize))
	links := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("archive tar: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		rel, err := cleanEntryName(hdr.Name)
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", hdr.Name, err)
		}
		if err := stageArchiveEntry(dir, rel, hdr, tr, links); err != nil {
			return fmt.Errorf("archive entry %q: %w", hdr.Name, err)
		}
	}
	return resolveArchiveLinks(dir, links)
}

func stageArchiveEntry(dir, rel string, hdr *tar.Header, r io.Reader, links map[string]string) error {
	if rel == "." {
		return nil
	}
	target := filepath.Join(dir, rel)
	switch hdr.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(target, 0o700)
	case tar.TypeReg: // the reader turns legacy TypeRegA into TypeReg or TypeDir
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(f, r, hdr.Size)
		return err
	case tar.TypeSymlink, tar.TypeLink:
		linkTarget := hdr.Linkname
		if hdr.Typeflag == tar.TypeSymlink && !strings.HasPrefix(linkTarget, "/") {
			linkTarget = path.Join(path.Dir(rel), linkTarget) //nolint:gosec // G305: cleanEntryName below refuses a target outside the archive
		}
		clean, err := cleanEntryName(linkTarget)
		if err != nil {
			return fmt.Errorf("link target %q: %w", hdr.Linkname, err)
		}
		links[rel] = clean
	}
	return nil // other types carry nothing an image needs
}

// resolveArchiveLinks hard-links each link to the regular file its target
// chain ends at. Paths on disk contain no symlinks, so lexical resolution is exact.
func resolveArchiveLinks(dir string, links map[string]string) error {
	for rel := range links {
		target := rel
		for i := 0; ; i++ {
			next, ok := links[target]
			if !ok {
				break
			}
			if i > 40 {
				return fmt.Errorf("archive link %q: too many levels: %w", rel, errdefs.ErrInvalidArgument)
			}
			target = next
		}
		fi, err := os.Lstat(filepath.Join(dir, target))
		if err != nil || !fi.Mode().IsRegular() {
			continue // dangling or not a file: the manifest will name what is missing
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := os.Link(filepath.Join(dir, target), dst); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("archive link %q: %w", rel, err)
		}
	}
	return nil
}

// sourcePath joins a path named inside the source (a manifest.json entry)
// to dir, refusing paths that leave it.
func sourcePath(dir, name string) (string, error) {
	rel, err := cleanEntryName(name)
	if err != nil || rel == "." {
		return "", fmt.Errorf("source path %q: %w", name, errdefs.ErrInvalidArgument)
	}
	return filepath.Join(dir, rel), nil
}
