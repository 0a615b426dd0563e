package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// logFollower reads a container's log across rotations: first the rotated
// files (oldest first, plain or gzipped), then the current file; it keeps
// the current file open, and when the log's path names a new file (the
// agent renamed it and the runtime reopened it) it reads the old one to
// its end, then the files rotated after it (a follower that fell behind
// by more than one rotation), before going on with the new one.
type logFollower struct {
	path    string
	c       *logCopier
	cur     *os.File
	r       *bufio.Reader
	pending []byte
	first   []byte // cur's first record, to find it once rotated and gzipped
}

// openLogFollower opens the current log first, so that a file rotated
// meanwhile is read once, through that descriptor.
func openLogFollower(path string, c *logCopier) (*logFollower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &logFollower{path: path, c: c, cur: f, r: bufio.NewReader(f)}, nil
}

func (l *logFollower) Close() error { return l.cur.Close() }

// copyRotated adds the rotated files' records, oldest first; the file
// open as the current one, rotated since, is left to copyCurrent. A file
// removed meanwhile (beyond the files kept) is skipped.
func (l *logFollower) copyRotated() error {
	files, err := logrotate.RotatedFiles(l.path)
	if err != nil {
		return err
	}
	for _, file := range files {
		if same, _ := sameFile(l.cur, file); same {
			break // rotated after we opened it: the newest rotated file
		}
		if err := l.copyFile(file); err != nil {
			return err
		}
	}
	return nil
}

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
	if err := readRecords(l.r, &l.pending, l.add); err != nil {
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
	l.cur, l.r, l.pending, l.first = next, bufio.NewReader(next), l.pending[:0], nil
	return l.copyCurrent()
}

func (l *logFollower) add(rec []byte) {
	if l.first == nil {
		l.first = append([]byte{}, rec...)
	}
	l.c.add(rec)
}

// copySkipped adds the records of the files rotated after the current
// one and before next, the file at the log's path now. When the current
// file is no longer among the rotated ones (removed beyond the files
// kept), what followed it is lost as with the kubelet, and nothing is
// added.
func (l *logFollower) copySkipped(next *os.File) error {
	files, err := logrotate.RotatedFiles(l.path)
	if err != nil {
		return err
	}
	start := -1
	for i := len(files) - 1; i >= 0 && start < 0; i-- {
		if l.holdsCurrent(files[i]) {
			start = i
		}
	}
	if start < 0 {
		return nil
	}
	for _, file := range files[start+1:] {
		if same, _ := sameFile(next, file); same {
			break // rotated meanwhile: read through next
		}
		if err := l.copyFile(file); err != nil {
			return err
		}
	}
	return nil
}

// holdsCurrent reports whether a rotated file is the current one: the
// same file, or one starting with its first record (gzipped since).
func (l *logFollower) holdsCurrent(file string) bool {
	if same, _ := sameFile(l.cur, file); same {
		return true
	}
	if l.first == nil {
		return false
	}
	rc, err := logrotate.OpenRotated(file)
	if err != nil {
		return false // removed meanwhile
	}
	defer rc.Close()
	line, err := bufio.NewReader(rc).ReadBytes('\n')
	return err == nil && bytes.Equal(line[:len(line)-1], l.first)
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
