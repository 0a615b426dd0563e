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
//
// The old file may still grow after the new one exists, even after it
// has its first record: containerd's ReopenContainerLog creates the new
// file, then swaps the writers, and lets the old one write what it holds
// (whole lines and the start of a cut one) while the new writer has
// begun. So the follower moves on only once the old file has kept its
// size for one look after the new one appeared.
type logFollower struct {
	path    string
	c       *logCopier
	cur     *os.File
	r       *bufio.Reader
	pending []byte
	// settled is cur's size at the last look that found a new file at
	// path, -1 when none did.
	settled int64
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
	l := &logFollower{path: path, c: c, cur: f, r: bufio.NewReader(f), before: map[string]bool{}, settled: -1}
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
	err = readRecords(bufio.NewReader(rc), &pending, l.c.add)
	l.c.emit()
	if err != nil {
		return fmt.Errorf("log %s: %w", file, err)
	}
	return nil
}

// copyCurrent adds the complete records the current file holds now.
func (l *logFollower) copyCurrent() error {
	err := readRecords(l.r, &l.pending, l.c.add)
	l.c.emit()
	if err != nil {
		return fmt.Errorf("log %s: %w", l.path, err)
	}
	return nil
}

// follow copies the current file, moving to the new file at the log's
// path once the old file has stopped growing (see logFollower): the old
// file is read to its end first.
func (l *logFollower) follow() error {
	if err := l.copyCurrent(); err != nil {
		return err
	}
	next, err := l.nextFile()
	if next == nil || err != nil {
		l.settled = -1 // nothing to move to (the log may be gone for good)
		return err
	}
	if err := l.copyCurrent(); err != nil { // the old file's last records
		next.Close()
		return err
	}
	st, err := l.cur.Stat()
	if err != nil {
		next.Close()
		return err
	}
	if st.Size() != l.settled {
		next.Close()
		l.settled = st.Size()
		return nil
	}
	if err := l.copySkipped(next); err != nil {
		next.Close()
		return err
	}
	l.cur.Close()
	l.cur, l.r, l.pending, l.settled = next, bufio.NewReader(next), l.pending[:0], -1
	return l.copyCurrent()
}

// nextFile opens the file at the log's path when it is not cur; nil
// otherwise (also between the rename and the reopen). It may be empty
// yet: the writer may have nothing more to say, and the files rotated
// between cur and it must still be read.
func (l *logFollower) nextFile() (*os.File, error) {
	next, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := next.Stat()
	cur, cerr := l.cur.Stat()
	if err != nil || cerr != nil || os.SameFile(st, cur) {
		next.Close()
		return nil, errors.Join(err, cerr)
	}
	return next, nil
}

// switching reports whether a new file was found and the follower waits
// for the old one to settle.
func (l *logFollower) switching() bool { return l.settled >= 0 }

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

// settleInterval is how long the old file must keep its size once the
// new one has begun (see logFollower).
const settleInterval = 50 * time.Millisecond

// followUntil follows the log every interval while running says the
// container runs, then copies what is left (finishing a move to a new
// file under way).
func (l *logFollower) followUntil(ctx context.Context, interval time.Duration, running func() (bool, error)) error {
	for {
		more, err := running()
		if err != nil {
			return err
		}
		if err := l.follow(); err != nil {
			return err
		}
		if !more && !l.switching() {
			return nil
		}
		wait := interval
		if l.switching() {
			wait = min(interval, settleInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
