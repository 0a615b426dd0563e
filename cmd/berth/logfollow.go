package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// logFollower reads a container's log across rotations: first the rotated
// files (oldest first, plain or gzipped), then the current file. It keeps
// the current file open and, at each look (between two parts it reads,
// and every interval apart from the reading), opens the file at the
// log's path when that is a new one (the agent renamed the old one and
// the runtime reopened the log) and keeps it too, in the order found: a
// follower behind the writer, or held up by its output, still reads
// every file it saw through its descriptor, plain, though rotation
// compresses or removes it meanwhile. It moves to the next file once it
// has read the old one to its end, reading first any file rotated in
// between that it never had open (the log rotated twice or more between
// two looks; read by name, perhaps gzipped, perhaps gone).
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
	// mu guards next, and cur as holdPath sees it (only the reader
	// changes cur; a goroutine of followUntil holds files too).
	mu sync.Mutex
	// next are the files found at path after cur, oldest first, at most
	// maxHeld.
	next []*os.File
	// behind says the last copyCurrent stopped before cur's end.
	behind bool
	// settled is cur's size at the last look while next was not empty,
	// -1 when it was.
	settled int64
	// before are the rotated files (by name without ".gz") known: rotated
	// before cur was the current file, cur's own, or read; older are those
	// rotated before the follower opened the log, oldest first, for
	// copyRotated.
	before map[string]bool
	older  []string
	// log is told of each move to a new file (debug) and of a rotated
	// file removed between its listing and its reading (warn; a file
	// removed before any listing of the follower's goes untold).
	log *slog.Logger
}

// lookEvery is how much of the current file the follower reads between
// two looks at the log: a follower reading a file that grows almost as
// fast as it reads must still see each new file rotation makes (or the
// file is gone before it is opened).
const lookEvery = 2 << 20

// maxHeld bounds the files a follower keeps open ahead of the one it
// reads: a follower far behind must not keep the disk space of files
// rotation removed without bound.
const maxHeld = 4

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
	l := &logFollower{path: path, c: c, log: slog.New(slog.DiscardHandler), cur: f, r: bufio.NewReaderSize(f, readBuffer), before: map[string]bool{}, settled: -1}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	for _, file := range files {
		if src, ok := logrotate.RotatedSource(file); ok && src.Is(st) {
			break // rotated (even compressed) after we opened it
		}
		l.before[rotatedKey(file)] = true
		l.older = append(l.older, file)
	}
	return l, nil
}

func (l *logFollower) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.next {
		f.Close()
	}
	return l.cur.Close()
}

// copyRotated adds the records of the rotated files older than the file
// open as the current one, oldest first (that one, rotated since, is left
// to copyCurrent). A file removed meanwhile (beyond the files kept) is
// skipped.
func (l *logFollower) copyRotated() error {
	for _, file := range l.older {
		if _, err := l.copyFile(file); err != nil {
			return err
		}
	}
	return nil
}

// rotatedKey names a rotated file whether or not it is compressed yet.
func rotatedKey(file string) string { return strings.TrimSuffix(file, ".gz") }

// copyFile adds the records of a rotated file; gone says it was removed
// (or compressed and then removed) before it could be opened.
func (l *logFollower) copyFile(file string) (gone bool, err error) {
	rc, err := logrotate.OpenRotated(file)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer rc.Close()
	var pending []byte
	err = readRecords(bufio.NewReaderSize(rc, readBuffer), &pending, l.c.add)
	l.c.emit()
	if err != nil {
		return false, fmt.Errorf("log %s: %w", file, err)
	}
	return false, nil
}

// copyCurrent adds the complete records the current file holds now, up
// to lookEvery bytes of them (behind says it stopped there).
func (l *logFollower) copyCurrent() error {
	var err error
	l.behind, err = readRecordsUpTo(l.r, &l.pending, l.c.add, lookEvery)
	l.c.emit()
	if err != nil {
		return fmt.Errorf("log %s: %w", l.path, err)
	}
	return nil
}

// copyToEnd adds every complete record the current file holds now.
func (l *logFollower) copyToEnd() error {
	for {
		if err := l.copyCurrent(); err != nil || !l.behind {
			return err
		}
	}
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

// readBuffer is the read size of a log file: a follower must read faster
// than a container can write.
const readBuffer = 64 << 10

// settleInterval is how long the old file must keep its size once the
// new one has begun (see logFollower).
const settleInterval = 50 * time.Millisecond

// followUntil follows the log every interval while running says the
// container runs, then copies what is left (finishing a move to a new
// file under way). running is asked apart from the reading (see
// watchRunning): an answer it gives was asked before the follow after
// it, so that follow copies everything written before the end.
func (l *logFollower) followUntil(ctx context.Context, interval time.Duration, running func() (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	var watching sync.WaitGroup
	defer watching.Wait()
	defer cancel()
	answers := watchRunning(ctx, interval, running)
	watching.Go(func() { l.watch(ctx, interval) })
	more := true
	for {
		if more {
			select {
			case a := <-answers:
				if a.err != nil {
					return a.err
				}
				more = a.more
			default:
			}
		}
		if err := l.follow(); err != nil {
			return err
		}
		if !more && !l.switching() && !l.behind {
			return nil
		}
		wait := interval
		switch {
		case l.behind:
			wait = 0
		case l.switching():
			wait = min(interval, settleInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// runAnswer is one answer of a running check.
type runAnswer struct {
	more bool
	err  error
}

// watchRunning asks running every interval in a goroutine of its own, and
// hands each answer over when it is taken: an agent slow to answer (busy,
// or restarting) must not hold up the reading of a log written at full
// speed, or rotation removes files before they are read. It stops after
// a last answer (not running, or an error) or when ctx ends (an answer
// under way then is not awaited).
func watchRunning(ctx context.Context, interval time.Duration, running func() (bool, error)) <-chan runAnswer {
	answers := make(chan runAnswer)
	go func() {
		for {
			more, err := running()
			select {
			case answers <- runAnswer{more: more, err: err}:
			case <-ctx.Done():
				return
			}
			if !more || err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return answers
}
