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

// logCopier copies the records of one log file, applying a filter. It
// keeps the unfinished record at the end of the file for the next call.
type logCopier struct {
	r       *bufio.Reader
	w       io.Writer
	f       logFilter
	pending []byte
	started bool // the tail has been printed
}

func newLogCopier(r io.Reader, w io.Writer, f logFilter) *logCopier {
	return &logCopier{r: bufio.NewReader(r), w: w, f: f}
}

// copy writes the records complete now: the first call the last f.tail
// of them, every later call each new one.
func (c *logCopier) copy() error {
	if !c.started && c.f.tail >= 0 {
		lines, err := c.readAll(c.f.tail)
		if err != nil {
			return err
		}
		for _, line := range lines {
			c.write(line)
		}
		c.started = true
		return nil
	}
	c.started = true
	for {
		line, ok, err := c.next()
		if !ok || err != nil {
			return err
		}
		c.write(line)
	}
}

// readAll reads every complete record, keeping the last n.
func (c *logCopier) readAll(n int) ([][]byte, error) {
	ring := make([][]byte, 0, min(n, 1024))
	for {
		line, ok, err := c.next()
		if !ok || err != nil {
			return ring, err
		}
		if n == 0 {
			continue
		}
		if len(ring) == n {
			ring = append(ring[:0:0], ring[1:]...)
		}
		ring = append(ring, line)
	}
}

// next returns the next complete record line (without its newline); ok is
// false at the end of what the file holds now.
func (c *logCopier) next() ([]byte, bool, error) {
	chunk, err := c.r.ReadBytes('\n')
	c.pending = append(c.pending, chunk...)
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	line := bytes.Clone(c.pending[:len(c.pending)-1])
	c.pending = c.pending[:0]
	return line, true, nil
}

// write prints one record with one Write (logs of several pods share w); a
// damaged record is skipped, as kubelet does.
func (c *logCopier) write(line []byte) {
	recs, err := crilog.ReadRecords(bytes.NewReader(append(line, '\n')))
	if err != nil || len(recs) != 1 {
		return
	}
	rec := recs[0]
	if !c.f.since.IsZero() && rec.Time.Before(c.f.since) {
		return
	}
	var out []byte
	out = append(out, c.f.prefix...)
	if c.f.timestamps {
		out = append(out, rec.Time.Format(time.RFC3339Nano)+" "...)
	}
	out = append(out, rec.Content...)
	if !rec.Partial {
		out = append(out, '\n')
	}
	_, _ = c.w.Write(out) // a closed stdout ends the command anyway
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
