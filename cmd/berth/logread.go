package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
)

// logFilter says which records of a log `berth logs` prints and how, with
// kubelet's semantics (kubelet's ReadLogs): tail counts records (a line
// longer than the runtime's record size is several), and since drops the
// records of the tail older than it.
type logFilter struct {
	tail       int       // the last tail records only; < 0: all
	since      time.Time // records before it are skipped; zero: none
	timestamps bool      // prefix each line with its RFC 3339 timestamp
	prefix     string    // prefix of each line, e.g. "[pod/web/app] "
}

// newLogFilter turns kubectl's flags into a filter: since is a duration
// (rounded up to whole seconds, as kubectl sends it), sinceTime an
// RFC 3339 time; at most one of them. tail < 0 means every record, except
// with a selector, where kubectl prints the last 10 by default.
func newLogFilter(since time.Duration, sinceTime string, tail int, selector bool, now time.Time) (logFilter, error) {
	f := logFilter{tail: tail}
	if since != 0 && sinceTime != "" {
		return f, errors.New("--since and --since-time: at most one of them")
	}
	if since < 0 {
		return f, fmt.Errorf("--since %s: must be greater than 0", since)
	}
	if since > 0 {
		secs := math.Ceil(since.Seconds())
		f.since = now.Add(-time.Duration(secs) * time.Second)
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return f, fmt.Errorf("--since-time %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z: %w", sinceTime, err)
		}
		f.since = t
	}
	if tail < -1 {
		return f, fmt.Errorf("--tail %d: want -1 (all) or a number of lines >= 0", tail)
	}
	if tail == -1 && selector {
		f.tail = 10
	}
	return f, nil
}

// logCopier prints the complete records of a log, read from one file or
// several (the rotated ones, then the current one), applying a filter.
// While the tail is gathered it keeps the last f.tail records; flush
// prints them, and every record added after that is printed at once.
type logCopier struct {
	w    io.Writer
	f    logFilter
	tail *recordRing // nil once the tail has been printed, or with no tail
	out  []byte      // whole records printed by the next emit
}

// maxBatch bounds the records a logCopier holds before it writes them.
const maxBatch = 64 << 10

func newLogCopier(w io.Writer, f logFilter) *logCopier {
	c := &logCopier{w: w, f: f}
	if f.tail >= 0 {
		c.tail = &recordRing{max: f.tail}
	}
	return c
}

// add takes one complete record line, without its newline.
func (c *logCopier) add(line []byte) {
	if c.tail != nil {
		c.tail.push(bytes.Clone(line))
		return
	}
	c.write(line)
}

// flush prints the gathered tail and what is held; later records are
// printed as added.
func (c *logCopier) flush() {
	if c.tail != nil {
		for _, line := range c.tail.lines() {
			c.write(line)
		}
		c.tail = nil
	}
	c.emit()
}

// emit writes the records printed since the last emit with one Write
// (logs of several pods share w: each Write holds whole records only).
func (c *logCopier) emit() {
	if len(c.out) > 0 {
		_, _ = c.w.Write(c.out) // a closed stdout ends the command anyway
		c.out = c.out[:0]
	}
}

// recordRing keeps the last max records pushed.
type recordRing struct {
	max   int
	buf   [][]byte
	start int
}

func (r *recordRing) push(line []byte) {
	switch {
	case r.max == 0:
	case len(r.buf) < r.max:
		r.buf = append(r.buf, line)
	default:
		r.buf[r.start] = line
		r.start = (r.start + 1) % r.max
	}
}

func (r *recordRing) lines() [][]byte {
	return append(append([][]byte{}, r.buf[r.start:]...), r.buf[:r.start]...)
}

// readRecords hands every complete record line r holds now to add (the
// line is add's only until it returns); the unfinished one at the end
// stays in pending for the next call.
func readRecords(r *bufio.Reader, pending *[]byte, add func([]byte)) error {
	_, err := readRecordsUpTo(r, pending, add, 0)
	return err
}

// readRecordsUpTo is readRecords that stops once it has read limit bytes
// or more (0: no limit) and says so with more.
func readRecordsUpTo(r *bufio.Reader, pending *[]byte, add func([]byte), limit int) (more bool, err error) {
	for read := 0; limit <= 0 || read < limit; {
		chunk, err := r.ReadSlice('\n')
		read += len(chunk)
		switch {
		case errors.Is(err, bufio.ErrBufferFull) || errors.Is(err, io.EOF):
			*pending = append(*pending, chunk...)
			if errors.Is(err, io.EOF) {
				return false, nil
			}
		case err != nil:
			return false, err
		case len(*pending) == 0:
			add(chunk[:len(chunk)-1])
		default:
			*pending = append(*pending, chunk...)
			add((*pending)[:len(*pending)-1])
			*pending = (*pending)[:0]
		}
	}
	return true, nil
}

// write prints one record (see emit); a damaged record is skipped, as
// kubelet does.
func (c *logCopier) write(line []byte) {
	rec, err := crilog.ParseRecord(line)
	if err != nil {
		return
	}
	if !c.f.since.IsZero() && rec.Time.Before(c.f.since) {
		return
	}
	c.out = append(c.out, c.f.prefix...)
	if c.f.timestamps {
		c.out = append(c.out, rec.Time.Format(time.RFC3339Nano)+" "...)
	}
	c.out = append(c.out, rec.Content...)
	if !rec.Partial {
		c.out = append(c.out, '\n')
	}
	if len(c.out) >= maxBatch {
		c.emit()
	}
}

// syncWriter serialises the writes of several followed logs.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
