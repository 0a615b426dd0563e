package crilog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"time"
)

// Record is one parsed log record.
type Record struct {
	Time    time.Time
	Stream  Stream
	Partial bool
	Content []byte
}

// ReadRecords parses every record of a CRI log.
func ReadRecords(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var records []Record
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				return records, fmt.Errorf("container log: line %d: unterminated record", n)
			}
			rec, perr := ParseRecord(line[:len(line)-1])
			if perr != nil {
				return records, fmt.Errorf("container log: line %d: %w", n, perr)
			}
			records = append(records, rec)
		}
		if err == io.EOF {
			return records, nil
		}
		if err != nil {
			return records, fmt.Errorf("container log: line %d: %w", n, err)
		}
	}
}

// ParseRecord parses one record line, without its newline. Content is a
// slice of line.
func ParseRecord(line []byte) (Record, error) {
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	stream, rest2, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok2 {
		return Record{}, fmt.Errorf("record: too few fields")
	}
	tag, content, _ := bytes.Cut(rest2, []byte(" "))
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Record{}, fmt.Errorf("record: timestamp: %w", err)
	}
	rec := Record{Time: t, Stream: Stream(stream)}
	if rec.Stream != Stdout && rec.Stream != Stderr {
		return Record{}, fmt.Errorf("record: stream %q: unknown", stream)
	}
	switch string(tag) {
	case "P":
		rec.Partial = true
	case "F":
	default:
		return Record{}, fmt.Errorf("record: tag %q: unknown", tag)
	}
	if len(content) > 0 {
		rec.Content = content
	}
	return rec, nil
}

// Lines joins records into the lines a container wrote to stream, a
// trailing unfinished line included.
func Lines(records []Record, stream Stream) []string {
	var lines []string
	var cur []byte
	open := false
	for _, rec := range records {
		if rec.Stream != stream {
			continue
		}
		cur = append(cur, rec.Content...)
		open = true
		if !rec.Partial {
			lines = append(lines, string(cur))
			cur, open = cur[:0], false
		}
	}
	if open {
		lines = append(lines, string(cur))
	}
	return lines
}
