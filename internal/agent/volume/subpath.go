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

// subPathTarget is a subPath resolved by name inside its volume: base is
// the volume's path with symlinks resolved, existing the deepest existing
// path reached (relative to base, free of symlinks, "." for base itself),
// missing the components after it still to be created.
type subPathTarget struct {
	base, existing string
	missing        []string
}

// path is where the target is by name, for messages.
func (t subPathTarget) path() string {
	return filepath.Join(append([]string{t.base, t.existing}, t.missing...)...)
}

// resolveSubPath resolves subPath inside the volume at volumePath the way
// the kernel would (following every symlink, an absolute one from the
// host's root), so that symlinks which stay inside the volume keep working.
// It fails when subPath is absolute or has a ".." component, or when the
// resolved path lies outside the volume. The result is only a plan:
// openSubPath then walks it on descriptors, refusing any symlink, so a
// container changing the volume in between makes the open fail rather than
// escape.
func resolveSubPath(volumePath, subPath string) (subPathTarget, error) {
	if subPath == "" || filepath.IsAbs(subPath) {
		return subPathTarget{}, fmt.Errorf("subPath %q: must be a non-empty relative path", subPath)
	}
	if slices.Contains(strings.Split(subPath, "/"), "..") {
		return subPathTarget{}, fmt.Errorf("subPath %q: must not contain '..'", subPath)
	}
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return subPathTarget{}, fmt.Errorf("subPath %q: volume: %w", subPath, err)
	}
	existing, missing, err := resolveExisting(base, subPath)
	if err != nil {
		return subPathTarget{}, fmt.Errorf("subPath %q: %w", subPath, err)
	}
	if !within(base, existing) {
		return subPathTarget{}, fmt.Errorf("subPath %q: resolves to %s, outside the volume", subPath, existing)
	}
	if slices.Contains(missing, "..") {
		return subPathTarget{}, fmt.Errorf("subPath %q: %s does not exist", subPath, filepath.Join(existing, missing[0]))
	}
	rel, err := filepath.Rel(base, existing)
	if err != nil {
		return subPathTarget{}, fmt.Errorf("subPath %q: %w", subPath, err)
	}
	return subPathTarget{base: base, existing: rel, missing: missing}, nil
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

func within(base, path string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}
