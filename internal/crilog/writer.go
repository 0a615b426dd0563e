package crilog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Stream names the container stream a record came from.
type Stream string

// The two streams a container log holds.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// MaxContent is the longest content of one record; longer lines are split.
const MaxContent = 16 * 1024

// readBufferSize is the per-stream read buffer of Copy.
const readBufferSize = 4096

// Writer appends records to one CRI log file. It is safe for concurrent
// use: every record is written whole with one write. It holds the pod's log
// directory and opens the log beneath it, never following a symlink
// (open.go), on Open and on every Reopen.
type Writer struct {
	mu      sync.Mutex
	dir     *os.File // the pod's log directory; nil: output is discarded
	rel     string   // the log's path beneath dir
	path    string   // for messages
	file    *os.File
	created bool // Open made the file
	record  []byte
	now     func() time.Time
}

// Open opens the log rel (relative: kubelet's <container>/<n>.log) beneath
// the pod's log directory dir (absolute: kubelet's
// /var/log/pods/<ns>_<name>_<uid>) for appending, creating what is
// missing (directories 0700, the log 0640). dir is trusted but for its
// last component, which must not be a symlink; beneath it nothing is
// followed: a symlink, a FIFO or device, or a hard link where the log or
// a directory above it should be makes Open fail, saying so.
func Open(dir, rel string) (*Writer, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	f, created, err := openBeneath(d, rel)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Writer{dir: d, rel: rel, path: describe(d, rel), file: f, created: created, now: time.Now}, nil
}

// Discard returns a Writer that drops every record: CRI allows containers
// without a log.
func Discard() (*Writer, error) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("container log: %w", err)
	}
	return &Writer{path: os.DevNull, file: f, now: time.Now}, nil
}

// Reopen opens the log again beneath the directory Open opened, for log
// rotation: records written after it returns go to the new file. When
// the open fails (a symlink planted at the log's path), the Writer keeps
// the file it has. A closed Writer stays closed.
func (w *Writer) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return fmt.Errorf("container log %s: closed", w.path)
	}
	if w.dir == nil {
		return nil // discarding: nothing to reopen
	}
	f, _, err := openBeneath(w.dir, w.rel)
	if err != nil {
		return err
	}
	w.file.Close()
	w.file = f
	return nil
}

// Abandon closes the Writer and removes the log if Open created it and it
// is still that file: the container it was for was never made.
func (w *Writer) Abandon() error {
	w.mu.Lock()
	var err error
	if w.created && w.dir != nil && w.file != nil {
		err = removeBeneath(w.dir, w.rel, w.file)
	}
	w.mu.Unlock()
	return errors.Join(err, w.Close())
}

// Close closes the file; later records are dropped.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return nil
	}
	err := w.file.Close()
	w.file = nil
	if w.dir != nil {
		err = errors.Join(err, w.dir.Close())
		w.dir = nil
	}
	return err
}

// WriteRecord writes one record. content must not contain a newline and
// should be at most MaxContent bytes (Copy guarantees both).
func (w *Writer) WriteRecord(stream Stream, partial bool, content []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return fmt.Errorf("container log %s: closed", w.path)
	}
	tag := " F "
	if partial {
		tag = " P "
	}
	rec := w.now().AppendFormat(w.record[:0], time.RFC3339Nano)
	rec = append(rec, ' ')
	rec = append(rec, stream...)
	rec = append(rec, tag...)
	rec = append(rec, content...)
	rec = append(rec, '\n')
	if cap(rec) <= 2*MaxContent {
		w.record = rec[:0] // keep the scratch buffer, within bounds
	}
	if _, err := w.file.Write(rec); err != nil {
		return fmt.Errorf("container log %s: write: %w", w.path, err)
	}
	return nil
}

// Copy reads r until it ends and writes its lines as records of stream. A
// read error ends the stream like EOF does (a pty master reports EIO once
// the container side is closed). Write errors are returned after r is
// drained, so the container never blocks on a full pipe.
func (w *Writer) Copy(stream Stream, r io.Reader) error {
	br := bufio.NewReaderSize(r, readBufferSize)
	var pending []byte
	var writeErr error
	emit := func(partial bool, content []byte) {
		if err := w.WriteRecord(stream, partial, content); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		pending = append(pending, chunk...)
		for len(pending) > MaxContent && !lineComplete(pending, MaxContent) {
			emit(true, pending[:MaxContent])
			pending = append(pending[:0], pending[MaxContent:]...)
		}
		if err == nil {
			emit(false, trimNewline(pending))
			pending = pending[:0]
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(pending) > 0 {
			emit(true, pending)
		}
		return writeErr
	}
}

// lineComplete reports whether buf is a whole line whose content, without
// its newline, fits in limit bytes.
func lineComplete(buf []byte, limit int) bool {
	if buf[len(buf)-1] != '\n' {
		return false
	}
	return len(trimNewline(buf)) <= limit
}

func trimNewline(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
