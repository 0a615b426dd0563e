package trusted

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDirPath applies the rule to a directory and to every directory
// above it, from / down: whoever can write one of them, or replace one
// above, can change what is in dir. dir must be absolute and clean; no
// component may be a symbolic link (give the real path). One exception:
// a directory above dir may be world-writable when it is sticky and
// owned by root (/tmp), since then no one else can rename or remove what
// root made in it. consequence says what a writer could do; errors name
// the component.
func CheckDirPath(dir, consequence string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("%q: want an absolute, clean path", dir)
	}
	var paths []string // dir, its parent, ..., "/"
	for p := dir; ; p = filepath.Dir(p) {
		paths = append(paths, p)
		if p == "/" {
			break
		}
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := checkComponent(paths[i], i == 0, consequence); err != nil {
			return err
		}
	}
	return nil
}

// checkComponent checks one directory of the path; last is dir itself.
func checkComponent(path string, last bool, consequence string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, _ := filepath.EvalSymlinks(path)
		return fmt.Errorf("%s is a symbolic link (to %s): give the directory's real path", path, target)
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	err = CheckOwner(info)
	if err != nil && !last && info.Mode()&fs.ModeSticky != 0 && CheckOwner(withoutWrite{info}) == nil {
		return nil // a sticky directory above, owned by root: /tmp
	}
	if err != nil {
		return fmt.Errorf("%s %w: %s", path, err, consequence)
	}
	return nil
}

// withoutWrite is info with the group and others' write bits cleared: a
// sticky directory is held to the owner part of the rule only.
type withoutWrite struct{ fs.FileInfo }

func (w withoutWrite) Mode() fs.FileMode { return w.FileInfo.Mode() &^ 0o022 }
