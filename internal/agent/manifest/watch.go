package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
	"time"
)

const (
	// watchDebounce is how long Watch waits after a change for more to come
	// (an editor's save is several events) before reading the directory.
	watchDebounce = 100 * time.Millisecond
	// watchMaxDelay bounds the wait when changes keep coming.
	watchMaxDelay = time.Second
	// defaultRescanInterval is the safety-net rescan period when Watch is
	// given none (the kubelet's default file check frequency).
	defaultRescanInterval = 20 * time.Second
)

// Watch follows a manifest directory, as the kubelet follows its static-pod
// path, until ctx is done. It calls onChange with the directory's bundle
// once at start, then after each change to the set of manifest files or to
// their content (seen through inotify within watchDebounce, or by a rescan
// every interval; interval <= 0 means 20 s).
//
// The bundle holds the objects of every file without problems, decoded,
// defaulted and validated together; err is nil or an *InvalidError naming
// the files left out and why (see the package documentation). A nil bundle
// means the directory could not be read (err says why), for instance while
// it does not exist, or was refused: every scan checks it with
// CheckTrustedDir first. Watch keeps trying. onChange runs on Watch's goroutine,
// one call at a time.
//
// A receive from recheck (nil: never) scans the directory at once and
// reports it even when nothing changed: a caller that saw objects go
// confirms their absence by a later scan of its own timing.
func Watch(ctx context.Context, dir string, interval time.Duration, recheck <-chan struct{}, onChange func(*Bundle, error)) {
	if interval <= 0 {
		interval = defaultRescanInterval
	}
	events := watchDirectory(dir)
	defer events.close()
	rescan := time.NewTicker(interval)
	defer rescan.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()

	scanner := &dirScanner{dir: dir}
	scanner.scan(onChange)
	var firstUnscanned time.Time // zero: no change waiting for a scan
	for {
		select {
		case <-ctx.Done():
			return
		case <-events.changed:
			now := time.Now()
			if firstUnscanned.IsZero() {
				firstUnscanned = now
			}
			settle.Reset(max(0, min(watchDebounce, watchMaxDelay-now.Sub(firstUnscanned))))
		case <-settle.C:
			firstUnscanned = time.Time{}
			events.rearm()
			scanner.scan(onChange)
		case <-rescan.C:
			events.rearm()
			scanner.scan(onChange)
		case <-recheck:
			events.rearm()
			scanner.reported = false // report even an unchanged directory
			scanner.scan(onChange)
		}
	}
}

// dirScanner reads a manifest directory and reports it when it differs
// from what was last reported.
type dirScanner struct {
	dir      string
	reported bool
	last     string // fingerprint of the last report
}

func (s *dirScanner) scan(onChange func(*Bundle, error)) {
	err := CheckTrustedDir(s.dir)
	var files []manifestFile
	if err == nil {
		files, err = readManifestDir(s.dir, true)
	}
	fingerprint := ""
	if err != nil {
		fingerprint = "error: " + err.Error()
	} else {
		fingerprint = fingerprintFiles(files)
	}
	if s.reported && fingerprint == s.last {
		return
	}
	s.reported, s.last = true, fingerprint
	if err != nil {
		onChange(nil, err)
		return
	}
	onChange(loadValidFiles(files))
}

// fingerprintFiles hashes the names and contents of files.
func fingerprintFiles(files []manifestFile) string {
	hash := sha256.New()
	for _, f := range files {
		hash.Write([]byte(filepath.Base(f.path)))
		hash.Write(binary.AppendUvarint([]byte{0}, uint64(len(f.data))))
		hash.Write(f.data)
		if f.err != nil {
			hash.Write([]byte(f.err.Error()))
		}
	}
	return hex.EncodeToString(hash.Sum(nil))
}

// errNoObjects is the problem of a file that holds no object: most likely
// one being written in place (truncated, not yet written), so what it held
// is kept until it holds objects again or is removed.
var errNoObjects = errors.New("holds no object: left out, what it held kept, until it holds objects again (remove the file to delete them)")

// loadValidFiles builds the bundle of the files without problems. A file
// that does not decode, holds no object (errNoObjects), or defines an
// object an earlier file defines, is left out; then the rest is validated together, and every file holding an
// invalid object is left out, until what is left validates. Leaving out a
// ConfigMap's file can make a pod of another file invalid in turn.
func loadValidFiles(files []manifestFile) (*Bundle, error) {
	type decodedFile struct {
		path   string
		bundle *Bundle
	}
	var problems []Problem
	var decoded []decodedFile
	for _, f := range files {
		err := f.err
		var b *Bundle
		if err == nil {
			b, err = decodeSource(f.data, f.path)
		}
		if err == nil && b.Empty() {
			err = errNoObjects
		}
		if err != nil {
			problems = append(problems, problemsOf(err, f.path)...)
			continue
		}
		decoded = append(decoded, decodedFile{f.path, b})
	}
	for {
		merged := &Bundle{}
		merged.ensureMaps()
		var kept []decodedFile
		for _, f := range decoded {
			if err := merged.Merge(f.bundle); err != nil {
				problems = append(problems, problemsOf(err, f.path)...)
				continue
			}
			kept = append(kept, f)
		}
		err := merged.Validate()
		if err == nil {
			return merged, invalid(problems)
		}
		var invalidObjects *InvalidError
		if !errors.As(err, &invalidObjects) {
			return nil, err
		}
		problems = append(problems, invalidObjects.Problems...)
		decoded = slices.DeleteFunc(kept, func(f decodedFile) bool {
			return slices.Contains(invalidObjects.Sources(), f.path)
		})
	}
}
