package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxSymlinks bounds the links followed while resolving one subPath, as the
// kernel bounds its own walk.
const maxSymlinks = 40

// SafeSubPath resolves subPath inside the volume at volumePath the way the
// kernel would (following every symlink, an absolute one from the host's
// root) and returns the resulting path, free of symlinks. It fails when
// subPath is absolute or has a ".." component, or when the resolved path
// lies outside the volume, so a symlink planted in a volume cannot make a
// container mount the host. Missing directories at the end are created with
// the volume's permissions, as the kubelet does.
//
// The check happens before the runtime mounts the path: a container that can
// write to the volume and swaps a directory for a symlink in between is not
// stopped (the kubelet pins the path with an open file for that; berth's
// runtime mounts by path).
func SafeSubPath(volumePath, subPath string) (string, error) {
	if subPath == "" || filepath.IsAbs(subPath) {
		return "", fmt.Errorf("subPath %q: must be a non-empty relative path", subPath)
	}
	if slices.Contains(strings.Split(subPath, "/"), "..") {
		return "", fmt.Errorf("subPath %q: must not contain '..'", subPath)
	}
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", fmt.Errorf("subPath %q: volume: %w", subPath, err)
	}
	existing, missing, err := resolveExisting(base, subPath)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", subPath, err)
	}
	if !within(base, existing) {
		return "", fmt.Errorf("subPath %q: resolves to %s, outside the volume", subPath, existing)
	}
	if len(missing) == 0 {
		return existing, nil
	}
	if slices.Contains(missing, "..") {
		return "", fmt.Errorf("subPath %q: %s does not exist", subPath, filepath.Join(existing, missing[0]))
	}
	created, err := makeDirs(base, existing, missing)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", subPath, err)
	}
	return created, nil
}

// resolveExisting walks subPath from base with the kernel's rules and
// returns the deepest existing path reached (symlinks resolved) and the
// components after it that do not exist.
func resolveExisting(base, subPath string) (string, []string, error) {
	current := base
	pending := strings.Split(subPath, "/")
	links := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			current = filepath.Dir(current)
			continue
		}
		next := filepath.Join(current, part)
		info, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return current, append([]string{part}, pending...), nil
		}
		if err != nil {
			return "", nil, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			current = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", nil, fmt.Errorf("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		if filepath.IsAbs(target) {
			current = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return current, nil, nil
}

// makeDirs creates the missing directories below existing, refusing to go
// through anything that turns out not to be a plain directory.
func makeDirs(base, existing string, missing []string) (string, error) {
	info, err := os.Stat(base)
	if err != nil {
		return "", err
	}
	perm := info.Mode().Perm()
	current := existing
	for _, part := range missing {
		if part == "" || part == "." {
			continue
		}
		current = filepath.Join(current, part)
		if err := os.Mkdir(current, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		info, err := os.Lstat(current)
		if err != nil {
			return "", err
		}
		if !info.IsDir() {
			return "", fmt.Errorf("%s: not a directory", current)
		}
		if err := os.Chmod(current, perm); err != nil {
			return "", err
		}
	}
	return current, nil
}

func within(base, path string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}
