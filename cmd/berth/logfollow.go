package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// logFollower reads a container's log across rotations: first the rotated
// files (oldest first, plain or gzipped), then the current file; it keeps
// the current file open, and when the log's path names a new file (the
// agent renamed it and the runtime reopened it) it reads the old one to
// its end, then any file rotated after it that it never had open (two
// rotations or more between two looks), before going on with the new one.
type logFollower struct {
	path    string
	c       *logCopier
	cur     *os.File
	r       *bufio.Reader
	pending []byte
	// before are the rotated files (by name without ".gz") rotated before
	// cur was the current file; older are those of them rotated before
	// the follower opened the log, oldest first, for copyRotated.
	before map[string]bool
	older  []string
}

// openLogFollower opens the current log first, then lists the rotated
// files older than it, so that a file rotated meanwhile is read once,
// through that descriptor.
func openLogFollower(path string, c *logCopier) (*logFollower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	files, err := logrotate.RotatedFiles(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &logFollower{path: path, c: c, cur: f, r: bufio.NewReader(f), before: map[string]bool{}}
	for _, file := range files {
		if same, _ := sameFile(f, file); same {
			break // rotated after we opened it: the newest rotated file
		}
		l.before[rotatedKey(file)] = true
		l.older = append(l.older, file)
	}
	return l, nil
}

func (l *logFollower) Close() error { return l.cur.Close() }

// copyRotated adds the records of the rotated files older than the file
// open as the current one, oldest first (that one, rotated since, is left
// to copyCurrent). A file removed meanwhile (beyond the files kept) is
// skipped.
func (l *logFollower) copyRotated() error {
	for _, file := range l.older {
		if err := l.copyFile(file); err != nil {
			return err
		}
	}
	return nil
}

// copySkipped reads, before the follower moves on to next, the files
// rotated after cur that it never had open: of the rotated files not
// known as older than cur, the oldest is cur itself (read through its
// descriptor), the others were skipped, up to next if it was rotated
// meanwhile too. The files older than next are then known.
func (l *logFollower) copySkipped(next *os.File) error {
	files, err := logrotate.RotatedFiles(l.path)
	if err != nil {
		return err
	}
	newer := 0
	for _, file := range files {
		key := rotatedKey(file)
		if l.before[key] {
			continue
		}
		if same, _ := sameFile(next, file); same {
			break
		}
		l.before[key] = true
		if newer++; newer > 1 {
			if err := l.copyFile(file); err != nil {
				return err
			}
		}
	}
	return nil
}

// rotatedKey names a rotated file whether or not it is compressed yet.
func rotatedKey(file string) string { return strings.TrimSuffix(file, ".gz") }

func (l *logFollower) copyFile(file string) error {
	rc, err := logrotate.OpenRotated(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	var pending []byte
	if err := readRecords(bufio.NewReader(rc), &pending, l.c.add); err != nil {
		return fmt.Errorf("log %s: %w", file, err)
	}
	return nil
}

// copyCurrent adds the complete records the current file holds now.
func (l *logFollower) copyCurrent() error {
	if err := readRecords(l.r, &l.pending, l.c.add); err != nil {
		return fmt.Errorf("log %s: %w", l.path, err)
	}
	return nil
}

// follow copies the current file, moving to the new file at the log's
// path once the runtime writes to it: after its first record no record
// goes to the old file, which is then read to its end.
func (l *logFollower) follow() error {
	if err := l.copyCurrent(); err != nil {
		return err
	}
	next, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // between the rename and the reopen
	}
	if err != nil {
		return err
	}
	st, err := next.Stat()
	cur, cerr := l.cur.Stat()
	if err != nil || cerr != nil || os.SameFile(st, cur) || st.Size() == 0 {
		next.Close()
		return errors.Join(err, cerr)
	}
	if err := l.copyCurrent(); err != nil { // the old file's last records
		next.Close()
		return err
	}
	if err := l.copySkipped(next); err != nil {
		next.Close()
		return err
	}
	l.cur.Close()
	l.cur, l.r, l.pending = next, bufio.NewReader(next), l.pending[:0]
	return l.copyCurrent()
}

// sameFile reports whether f is the file at path.
func sameFile(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// followUntil follows the log every interval while running says the
// container runs, then copies what is left.
func (l *logFollower) followUntil(ctx context.Context, interval time.Duration, running func() bool) error {
	for {
		if err := l.follow(); err != nil {
			return err
		}
		if !running() {
			return l.follow()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}
