package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// hostPath checks (or creates) what the volume's type asks for and returns
// the path itself: the container mounts the host's file or directory.
func hostPath(src *v1.HostPathVolumeSource) (string, error) {
	path := src.Path
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("hostPath %q: not an absolute path", path)
	}
	typ := v1.HostPathUnset
	if src.Type != nil {
		typ = *src.Type
	}
	var err error
	switch typ {
	case v1.HostPathUnset:
		return path, nil
	case v1.HostPathDirectoryOrCreate:
		err = createIfMissing(path, func() error { return os.MkdirAll(path, 0o755) })
	case v1.HostPathFileOrCreate:
		err = createIfMissing(path, func() error { return createEmptyFile(path) })
	}
	if err != nil {
		return "", fmt.Errorf("hostPath %s: %w", path, err)
	}
	if err := checkHostPathType(path, typ); err != nil {
		return "", fmt.Errorf("hostPath %s: %w", path, err)
	}
	return path, nil
}

func createIfMissing(path string, create func() error) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return create()
}

// createEmptyFile creates an empty 0644 file; its directory must exist.
func createEmptyFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func checkHostPathType(path string, typ v1.HostPathType) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	mode := info.Mode()
	var ok bool
	var want string
	switch typ {
	case v1.HostPathDirectory, v1.HostPathDirectoryOrCreate:
		ok, want = mode.IsDir(), "a directory"
	case v1.HostPathFile, v1.HostPathFileOrCreate:
		ok, want = mode.IsRegular(), "a regular file"
	case v1.HostPathSocket:
		ok, want = mode&fs.ModeSocket != 0, "a socket"
	case v1.HostPathCharDev:
		ok, want = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice != 0, "a character device"
	case v1.HostPathBlockDev:
		ok, want = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0, "a block device"
	default:
		return fmt.Errorf("unknown hostPath type %q", typ)
	}
	if !ok {
		return fmt.Errorf("is not %s (type %s)", want, typ)
	}
	return nil
}
