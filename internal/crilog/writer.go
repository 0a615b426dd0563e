package crilog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
// use: every record is written whole with one write.
type Writer struct {
	mu     sync.Mutex
	path   string
	file   *os.File
	record []byte
	now    func() time.Time
}

// Open opens (creating it and its parent directories) the log at path for
// appending.
func Open(path string) (*Writer, error) {
	if path == "" {
		return nil, fmt.Errorf("container log: path: empty")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("container log %s: parent directory: %w", path, err)
	}
	f, err := openLog(path)
	if err != nil {
		return nil, err
	}
	return &Writer{path: path, file: f, now: time.Now}, nil
}

func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("container log %s: %w", path, err)
	}
	return f, nil
}

// Reopen closes the current file and opens path again, for log rotation:
// records written after it returns go to the new file. A closed Writer
// stays closed.
func (w *Writer) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return fmt.Errorf("container log %s: closed", w.path)
	}
	f, err := openLog(w.path)
	if err != nil {
		return err
	}
	w.file.Close()
	w.file = f
	return nil
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
