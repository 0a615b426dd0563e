package crilog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRecordFormat: AppendRecord writes the format ParseRecord reads back.
func TestRecordFormat(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	got := AppendRecord(nil, at, Stderr, true, []byte("hello world"))
	if want := "2024-05-06T07:08:09.123456789Z stderr P hello world\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	rec, err := ParseRecord(bytes.TrimSuffix(got, []byte("\n")))
	if err != nil || !rec.Time.Equal(at) || rec.Stream != Stderr || !rec.Partial || string(rec.Content) != "hello world" {
		t.Fatalf("parsed back: %+v, %v", rec, err)
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
