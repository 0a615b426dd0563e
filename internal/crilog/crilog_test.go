package crilog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTemp(t *testing.T) (*Writer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pods")
	path := filepath.Join(dir, "c", "0.log")
	w, err := Open(dir, "c/0.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, path
}

func readAll(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

type want struct {
	stream  Stream
	partial bool
	content string
}

func check(t *testing.T, got []Record, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Stream != w.stream || g.Partial != w.partial || string(g.Content) != w.content {
			t.Errorf("record %d: got %s partial=%v %q (len %d), want %s partial=%v len %d",
				i, g.Stream, g.Partial, trunc(g.Content), len(g.Content), w.stream, w.partial, len(w.content))
		}
		if g.Time.IsZero() {
			t.Errorf("record %d: zero timestamp", i)
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}

func TestCopyLinesAndPartialTail(t *testing.T) {
	w, path := openTemp(t)
	in := "one\ntwo\r\n\nthree without newline"
	if err := w.Copy(Stdout, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	check(t, readAll(t, path), []want{
		{Stdout, false, "one"},
		{Stdout, false, "two"},
		{Stdout, false, ""},
		{Stdout, true, "three without newline"},
	})
}

func TestCopySplitsLongLines(t *testing.T) {
	w, path := openTemp(t)
	a := strings.Repeat("a", MaxContent)
	b := strings.Repeat("b", 2*MaxContent+5)
	in := a + "\n" + b + "\n" + "c"
	if err := w.Copy(Stderr, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, path)
	check(t, recs, []want{
		{Stderr, false, a}, // exactly MaxContent is not split
		{Stderr, true, b[:MaxContent]},
		{Stderr, true, b[MaxContent : 2*MaxContent]},
		{Stderr, false, b[2*MaxContent:]},
		{Stderr, true, "c"},
	})
	lines := Lines(recs, Stderr)
	if len(lines) != 3 || lines[1] != b || lines[2] != "c" {
		t.Fatalf("Lines: got %d lines", len(lines))
	}
}

func TestCopyLongUnterminatedTail(t *testing.T) {
	w, path := openTemp(t)
	tail := strings.Repeat("x", MaxContent+10)
	if err := w.Copy(Stdout, io.MultiReader(strings.NewReader(tail))); err != nil {
		t.Fatal(err)
	}
	check(t, readAll(t, path), []want{
		{Stdout, true, tail[:MaxContent]},
		{Stdout, true, tail[MaxContent:]},
	})
}

func TestConcurrentStreamsWriteWholeRecords(t *testing.T) {
	w, path := openTemp(t)
	line := strings.Repeat("z", 3000) + "\n"
	var wg sync.WaitGroup
	for _, s := range []Stream{Stdout, Stderr} {
		wg.Add(1)
		go func(s Stream) {
			defer wg.Done()
			if err := w.Copy(s, strings.NewReader(strings.Repeat(line, 200))); err != nil {
				t.Error(err)
			}
		}(s)
	}
	wg.Wait()
	recs := readAll(t, path)
	if len(recs) != 400 {
		t.Fatalf("got %d records, want 400", len(recs))
	}
	for i, r := range recs {
		if r.Partial || len(r.Content) != 3000 {
			t.Fatalf("record %d: torn: partial=%v len=%d", i, r.Partial, len(r.Content))
		}
	}
}

func TestReopenAfterRotation(t *testing.T) {
	w, path := openTemp(t)
	if err := w.WriteRecord(Stdout, false, []byte("before")); err != nil {
		t.Fatal(err)
	}
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(Stdout, false, []byte("still old")); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(Stdout, false, []byte("after")); err != nil {
		t.Fatal(err)
	}
	check(t, readAll(t, rotated), []want{{Stdout, false, "before"}, {Stdout, false, "still old"}})
	check(t, readAll(t, path), []want{{Stdout, false, "after"}})
}

func TestRecordFormat(t *testing.T) {
	w, path := openTemp(t)
	w.now = func() time.Time { return time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC) }
	if err := w.WriteRecord(Stderr, true, []byte("hello world")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if got, want := string(data), "2024-05-06T07:08:09.123456789Z stderr P hello world\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestReadRecordsRejectsGarbage(t *testing.T) {
	for _, in := range []string{
		"not-a-time stdout F x\n",
		"2024-05-06T07:08:09Z stdin F x\n",
		"2024-05-06T07:08:09Z stdout X x\n",
		"2024-05-06T07:08:09Z stdout F unterminated",
		"2024-05-06T07:08:09Z\n",
		"2024-05-06T07:08:09Z stdout\n",
	} {
		if _, err := ReadRecords(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	recs, err := ReadRecords(strings.NewReader("2024-05-06T07:08:09Z stdout F\n"))
	if err != nil || len(recs) != 1 || len(recs[0].Content) != 0 {
		t.Fatalf("empty content record: %v %+v", err, recs)
	}
}
