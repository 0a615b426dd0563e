package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Layout of a generated volume (configMap, secret, downwardAPI, projected):
//
//	<dir>/..2025_01_02_03_04_05.123456  the files of one version
//	<dir>/..data -> ..2025_01_02_...    the current version
//	<dir>/<name> -> ..data/<name>       one link per top-level name
//
// An update writes a whole new version beside the current one, then points
// ..data at it with one rename, so a reader opening <dir>/<name> sees the old
// version or the new one, never a mix or a half-written file.
const (
	dataLink        = "..data"
	dataLinkTmp     = "..data_tmp"
	versionDirStamp = "2006_01_02_15_04_05."
)

// writeAtomic makes dir show exactly files, and reports whether it wrote a
// new version. The current version is kept when it already matches (content,
// mode, and group with an fsGroup), its links repaired if needed. Versions
// other than the current one are removed.
func writeAtomic(dir string, files payload, fsGroup *int64) (bool, error) {
	if err := validatePayload(files); err != nil {
		return false, err
	}
	current, err := currentVersion(dir)
	if err != nil {
		return false, err
	}
	written := false
	if current == "" || !versionMatches(filepath.Join(dir, current), files, fsGroup) {
		next, err := writeVersion(dir, files, fsGroup)
		if err != nil {
			return false, err
		}
		if err := pointDataAt(dir, next); err != nil {
			_ = os.RemoveAll(filepath.Join(dir, next))
			return false, err
		}
		current, written = next, true
	}
	if err := syncVisibleLinks(dir, files); err != nil {
		return written, err
	}
	return written, removeOtherVersions(dir, current)
}

// validatePayload refuses paths that could leave the volume or clash with
// the layout: absolute, with a ".." component, starting with "..", or both a
// file and a directory of another path.
func validatePayload(files payload) error {
	for p := range files {
		switch {
		case p == "" || filepath.IsAbs(p):
			return fmt.Errorf("path %q: must be a non-empty relative path", p)
		case strings.HasPrefix(p, ".."):
			return fmt.Errorf("path %q: must not start with '..'", p)
		}
		for _, part := range strings.Split(p, "/") {
			if part == ".." || part == "." || part == "" {
				return fmt.Errorf("path %q: must not contain '..', '.' or empty components", p)
			}
		}
		for q := range files {
			if strings.HasPrefix(q, p+"/") {
				return fmt.Errorf("path %q is a file and a directory of %q", p, q)
			}
		}
	}
	return nil
}

// currentVersion is the version directory ..data points at, "" if none.
func currentVersion(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, dataLink))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if strings.Contains(target, "/") || !strings.HasPrefix(target, "..") {
		return "", fmt.Errorf("%s: %s points at %q, not a version directory", dir, dataLink, target)
	}
	return target, nil
}

// versionMatches reports whether a version directory holds exactly files.
func versionMatches(version string, files payload, fsGroup *int64) bool {
	seen := 0
	err := filepath.WalkDir(version, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(version, path)
		want, ok := files[rel]
		info, statErr := d.Info()
		if !ok || statErr != nil || !info.Mode().IsRegular() || info.Mode()&fs.ModePerm != fileMode(want, fsGroup) {
			return fs.SkipAll
		}
		if fsGroup != nil && fileGroup(info) != *fsGroup {
			return fs.SkipAll
		}
		// The volume dir is the agent's and mounted read-only; at worst a swapped path makes the
		// comparison fail and the payload is written again.
		data, err := os.ReadFile(path) //nolint:gosec // G122: see above
		if err != nil || !bytes.Equal(data, want.data) {
			return fs.SkipAll
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

func fileMode(f file, fsGroup *int64) os.FileMode {
	if fsGroup != nil {
		return f.mode | 0o440
	}
	return f.mode
}

func fileGroup(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Gid)
	}
	return -1
}

// writeVersion writes files into a new version directory and returns its
// name.
func writeVersion(dir string, files payload, fsGroup *int64) (string, error) {
	version, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format(versionDirStamp))
	if err != nil {
		return "", err
	}
	if err := fillVersion(version, files, fsGroup); err != nil {
		_ = os.RemoveAll(version)
		return "", err
	}
	return filepath.Base(version), nil
}

func fillVersion(version string, files payload, fsGroup *int64) error {
	if err := os.Chmod(version, 0o755); err != nil {
		return err
	}
	for rel, f := range files {
		path := filepath.Join(version, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return err
		}
		if fsGroup != nil {
			if err := os.Lchown(path, -1, int(*fsGroup)); err != nil {
				return err
			}
		}
		if err := os.Chmod(path, fileMode(f, fsGroup)); err != nil {
			return err
		}
	}
	return nil
}

// pointDataAt switches ..data to version in one rename.
func pointDataAt(dir, version string) error {
	tmp := filepath.Join(dir, dataLinkTmp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, dataLink))
}

// syncVisibleLinks makes one <name> -> ..data/<name> link per top-level
// name of files and removes the agent's links to names that are gone.
func syncVisibleLinks(dir string, files payload) error {
	want := map[string]bool{}
	for p := range files {
		top, _, _ := strings.Cut(p, "/")
		want[top] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || want[name] {
			continue
		}
		if target, err := os.Readlink(filepath.Join(dir, name)); err == nil && target == dataLink+"/"+name {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for name := range want {
		if err := ensureLink(filepath.Join(dir, name), dataLink+"/"+name); err != nil {
			return err
		}
	}
	return nil
}

func ensureLink(path, target string) error {
	existing, err := os.Readlink(path)
	switch {
	case err == nil && existing == target:
		return nil
	case err == nil:
		if err := os.Remove(path); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: in the way of the link to %s: %w", path, target, err)
	}
	return os.Symlink(target, path)
}

// removeOtherVersions deletes every version directory but current, and a
// stray ..data_tmp.
func removeOtherVersions(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "..") || name == current || name == dataLink {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
	}
	return errors.Join(errs...)
}
