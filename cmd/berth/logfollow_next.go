package main

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// follow copies the current file (a part of it when it is far behind,
// see lookEvery) and holds the file at the log's path if it is new; once
// a file follows cur and cur has stopped growing (see logFollower), it
// reads the files rotated in between that it never had open and moves
// to the next file.
func (l *logFollower) follow() error {
	if err := l.copyCurrent(); err != nil {
		return err
	}
	if err := l.holdPath(); err != nil {
		return err
	}
	if !l.switching() {
		l.settled = -1 // nothing to move to (the log may be gone for good)
		return nil
	}
	if l.behind {
		return nil // cur is not read to its end yet
	}
	if err := l.copyCurrent(); err != nil || l.behind { // the old file's last records
		return err
	}
	st, err := l.cur.Stat()
	if err != nil {
		return err
	}
	if st.Size() != l.settled {
		if l.settled < 0 {
			l.log.Debug("the log was rotated: reading the old file to its end", "path", l.path, "size", st.Size())
		}
		l.settled = st.Size()
		return nil
	}
	if err := l.copySkipped(); err != nil {
		return err
	}
	l.moveOn()
	l.log.Debug("moved to the next file", "path", l.path, "old size", st.Size(), "files ahead", l.ahead())
	return l.copyCurrent()
}

// moveOn makes the first of next the current file.
func (l *logFollower) moveOn() {
	l.mu.Lock()
	old := l.cur
	l.cur, l.next = l.next[0], l.next[1:]
	l.mu.Unlock()
	old.Close()
	l.r, l.pending, l.settled = bufio.NewReaderSize(l.cur, readBuffer), l.pending[:0], -1
}

// switching reports whether a file follows cur: the follower goes on
// until it has read them all.
func (l *logFollower) switching() bool { return l.ahead() > 0 }

func (l *logFollower) ahead() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.next)
}

// watch holds each new file at the log's path every interval until ctx
// ends, whatever the reader does: a reader held up (by its output, or
// reading far behind) still gets every file rotation makes meanwhile, up
// to maxHeld.
func (l *logFollower) watch(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		if err := l.holdPath(); err != nil {
			l.log.Debug("look at the log", "path", l.path, "error", err)
		}
	}
}

// holdPath opens the file at the log's path and keeps it when it is new
// (see hold); between the rename and the reopen there is none. The lock
// is held from the open on: a look that opened the path before a
// rotation must not add that file after another look added the newer
// one.
func (l *logFollower) holdPath() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := l.holdLocked(f); err != nil {
		f.Close()
		return err
	}
	return nil
}

// holdLocked keeps f as the last of next unless it is cur or a file held
// already, or maxHeld files are held (f is then closed). It may be empty
// yet: the writer may have nothing more to say, and the files before it
// must still be read.
func (l *logFollower) holdLocked(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	for _, h := range append([]*os.File{l.cur}, l.next...) {
		if hst, err := h.Stat(); err == nil && os.SameFile(st, hst) {
			return f.Close()
		}
	}
	if len(l.next) >= maxHeld {
		return f.Close()
	}
	l.next = append(l.next, f)
	return nil
}

// copySkipped reads, before the follower moves from cur to next[0], the
// files rotated in between that it never had open (the log rotated twice
// or more between two looks), known as neither cur nor a file held (see
// logrotate.RotatedSource). When next[0] was rotated and is gone, so are
// the files older than it: the files not known are newer, and wait for a
// later move.
func (l *logFollower) copySkipped() error {
	cur, held, found := l.heldFiles() // before the listing: see heldFiles
	files, err := logrotate.RotatedFiles(l.path)
	if err != nil {
		return err
	}
	var between []string
	for _, file := range files {
		if l.before[rotatedKey(file)] {
			continue
		}
		src, ok := logrotate.RotatedSource(file)
		if ok && cur != nil && src.Is(cur) {
			l.before[rotatedKey(file)] = true // cur, read through its descriptor
			continue
		}
		if ok && slices.ContainsFunc(held, src.Is) {
			found = found || src.Is(held[0]) // a later file: next[0]'s is gone
			break
		}
		between = append(between, file)
	}
	if !found {
		return nil
	}
	for _, file := range between {
		l.before[rotatedKey(file)] = true
		gone, err := l.copyFile(file)
		if err != nil {
			return err
		}
		if gone {
			l.log.Warn("a rotated file was removed before it could be read: its lines are missing", "file", file)
		} else {
			l.log.Debug("read a file rotated between two looks", "file", file)
		}
	}
	return nil
}

// heldFiles describe cur (nil when it cannot be read) and the files of
// next (held[0] is next[0]'s; an unreadable one stops the list), and say
// whether next[0] is still the file at the log's path: then every rotated
// file not known, listed after this, is older than it.
func (l *logFollower) heldFiles() (cur os.FileInfo, held []os.FileInfo, atPath bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.next {
		st, err := f.Stat()
		if err != nil {
			break
		}
		held = append(held, st)
	}
	atPath, _ = sameFile(l.next[0], l.path)
	cur, _ = l.cur.Stat()
	return cur, held, atPath
}
