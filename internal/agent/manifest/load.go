package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// StdinSource is the source name that means standard input.
const StdinSource = "-"

// Load decodes path: a manifest file, a directory of them, or "-" for stdin.
// A directory contributes its *.yaml, *.yml and *.json files, in name order,
// without recursing and skipping dotfiles; an empty directory gives an empty
// bundle. Every problem of every file is reported in one *InvalidError, and
// then no bundle is returned. Load does not validate: merge what the caller
// needs, then call Validate.
func Load(path string, stdin io.Reader) (*Bundle, error) {
	if path == StdinSource {
		if stdin == nil {
			return nil, errors.New(`manifest: no standard input to read "-" from`)
		}
		return Decode(stdin, StdinSource)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return decodeSource(data, path)
	}
	return loadDir(path, false)
}

// LoadTrustedDir is Load of a directory the agent watches: the directory
// must pass CheckTrustedDir, and each manifest file (a symlink's target
// too) must be a regular file no one but root can change; a file that is
// not is a problem of that file.
func LoadTrustedDir(dir string) (*Bundle, error) {
	if err := CheckTrustedDir(dir); err != nil {
		return nil, err
	}
	return loadDir(dir, true)
}

func loadDir(path string, trusted bool) (*Bundle, error) {
	files, err := readManifestDir(path, trusted)
	if err != nil {
		return nil, err
	}
	b := &Bundle{}
	b.ensureMaps()
	var problems []Problem
	for _, f := range files {
		err := f.err
		var fileBundle *Bundle
		if err == nil {
			fileBundle, err = decodeSource(f.data, f.path)
		}
		if err == nil {
			err = b.Merge(fileBundle)
		}
		problems = append(problems, problemsOf(err, f.path)...)
	}
	if len(problems) > 0 {
		return nil, invalid(problems)
	}
	return b, nil
}

// manifestFile is one file of a manifest directory, read whole.
type manifestFile struct {
	path string
	data []byte
	err  error // the file cannot be used (trusted reads only)
}

// readManifestDir reads the manifest files of dir in name order. Symbolic
// links to regular files count; files that vanish while being read are
// skipped (an editor's save in progress). trusted reads each file with
// readTrustedFile.
func readManifestDir(dir string, trusted bool) ([]manifestFile, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var files []manifestFile
	for _, entry := range entries {
		if !isManifestFileName(entry.Name()) {
			continue
		}
		path := filepath.Join(dir, entry.Name())
		if trusted {
			data, err := readTrustedFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			files = append(files, manifestFile{path: path, data: data, err: err})
			continue
		}
		info, err := os.Stat(path)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifest directory: %w", err)
		}
		files = append(files, manifestFile{path: path, data: data})
	}
	return files, nil
}

// isManifestFileName accepts *.yaml, *.yml and *.json names that are not
// dotfiles, which leaves out editors' swap and backup files (.x.swp, x~,
// #x#, .#x).
func isManifestFileName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
