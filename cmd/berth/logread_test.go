package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var logNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestNewLogFilter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		since     time.Duration
		sinceTime string
		tail      int
		selector  bool
		wantSince time.Time
		wantTail  int
		wantErr   string
	}{
		{name: "nothing", tail: -1, wantTail: -1},
		{name: "selector tails 10", tail: -1, selector: true, wantTail: 10},
		{name: "selector with tail", tail: 3, selector: true, wantTail: 3},
		{name: "tail 0", tail: 0, wantTail: 0},
		{name: "since rounds up to seconds", since: 1500 * time.Millisecond, tail: -1, wantTail: -1, wantSince: logNow.Add(-2 * time.Second)},
		{name: "since hours", since: 3 * time.Hour, tail: -1, wantTail: -1, wantSince: logNow.Add(-3 * time.Hour)},
		{name: "since-time", sinceTime: "2026-11-24T11:00:00Z", tail: -1, wantTail: -1, wantSince: logNow.Add(-time.Hour)},
		{name: "since-time nano and offset", sinceTime: "2026-11-24T12:30:00.5+01:00", tail: -1, wantTail: -1, wantSince: logNow.Add(-30*time.Minute + 500*time.Millisecond)},
		{name: "both", since: time.Second, sinceTime: "2026-11-24T11:00:00Z", tail: -1, wantErr: "at most one"},
		{name: "negative since", since: -time.Second, tail: -1, wantErr: "greater than 0"},
		{name: "bad since-time", sinceTime: "yesterday", tail: -1, wantErr: "RFC 3339"},
		{name: "bad tail", tail: -2, wantErr: "--tail -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newLogFilter(tc.since, tc.sinceTime, tc.tail, tc.selector, logNow)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || f.tail != tc.wantTail || !f.since.Equal(tc.wantSince) {
				t.Errorf("filter tail %d since %v, %v; want tail %d since %v", f.tail, f.since, err, tc.wantTail, tc.wantSince)
			}
		})
	}
}

// testLog is a CRI log: five records a second apart, the third split
// into a partial and a final record, and an unfinished one at the end.
const testLog = `2026-11-24T11:59:55Z stdout F one
2026-11-24T11:59:56Z stderr F two
2026-11-24T11:59:57Z stdout P thr
2026-11-24T11:59:58Z stdout F ee
not a record
2026-11-24T11:59:59Z stdout F five
2026-11-24T12:00:00Z stdout F unfini`

func TestLogCopier(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter logFilter
		want   string
	}{
		{name: "all", filter: logFilter{tail: -1}, want: "one\ntwo\nthree\nfive\n"},
		{name: "tail counts records", filter: logFilter{tail: 2}, want: "five\n"}, // the damaged record counts, as in kubelet
		{name: "tail 3", filter: logFilter{tail: 3}, want: "ee\nfive\n"},
		{name: "tail 0", filter: logFilter{tail: 0}, want: ""},
		{name: "tail beyond", filter: logFilter{tail: 100}, want: "one\ntwo\nthree\nfive\n"},
		{name: "since", filter: logFilter{tail: -1, since: logNow.Add(-4 * time.Second)}, want: "two\nthree\nfive\n"},
		{name: "since drops the fragment", filter: logFilter{tail: -1, since: logNow.Add(-2500 * time.Millisecond)}, want: "ee\nfive\n"},
		{name: "tail then since", filter: logFilter{tail: 4, since: logNow.Add(-time.Second)}, want: "five\n"},
		{name: "timestamps", filter: logFilter{tail: 1, timestamps: true}, want: "2026-11-24T11:59:59Z five\n"},
		{name: "prefix", filter: logFilter{tail: 1, prefix: "[pod/a/b] ", timestamps: true}, want: "[pod/a/b] 2026-11-24T11:59:59Z five\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var pending []byte
			c := newLogCopier(&out, tc.filter)
			err := readRecords(bufio.NewReader(strings.NewReader(testLog)), &pending, c.add)
			c.flush()
			if err != nil || out.String() != tc.want {
				t.Errorf("copy: %q, %v; want %q", out.String(), err, tc.want)
			}
		})
	}
}

// A followed log: the unfinished record is printed once complete, and a
// tail applies to what the file held at first only.
func TestLogCopierFollows(t *testing.T) {
	var file, out bytes.Buffer
	var pending []byte
	file.WriteString(testLog)
	r := bufio.NewReader(&file)
	c := newLogCopier(&out, logFilter{tail: 1})
	err := readRecords(r, &pending, c.add)
	c.flush()
	if err != nil || out.String() != "five\n" {
		t.Fatalf("first copy: %q, %v", out.String(), err)
	}
	file.WriteString("shed\n2026-11-24T12:00:01Z stdout F six\n2026-11-24T12:00:02Z stdout F seven\n")
	err = readRecords(r, &pending, c.add)
	c.emit()
	if err != nil || out.String() != "five\nunfinished\nsix\nseven\n" {
		t.Errorf("second copy: %q, %v", out.String(), err)
	}
}

func TestMatchingPods(t *testing.T) {
	pod := func(name string, l map[string]string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	pods := []v1.Pod{
		pod("web-b", map[string]string{"app": "web", "tier": "front"}),
		pod("web-a", map[string]string{"app": "web"}),
		pod("db", map[string]string{"app": "db", "tier": "back"}),
		pod("bare", nil),
		pod("web-a", map[string]string{"app": "web"}), // its replacement
	}
	for sel, want := range map[string]string{
		"app=web":              "web-a,web-b",
		"app=web,tier=front":   "web-b",
		"app!=web":             "bare,db",
		"tier":                 "db,web-b",
		"!tier":                "bare,web-a",
		"app in (db, web)":     "db,web-a,web-b",
		"app notin (web),tier": "db",
		"app=nothing":          "",
	} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatalf("parse %q: %v", sel, err)
		}
		if got := strings.Join(matchingPods(pods, s), ","); got != want {
			t.Errorf("selector %q matches %q; want %q", sel, got, want)
		}
	}
}

// Records longer than the reader's buffer are read whole (gathered in
// pending), and the short ones between them are not mixed up with them.
func TestReadRecordsLongerThanTheBuffer(t *testing.T) {
	long := strings.Repeat("x", 100)
	log := testLog + "shed\n2026-11-24T12:00:01Z stdout F " + long + "\n2026-11-24T12:00:02Z stdout F six\n"
	var out bytes.Buffer
	var pending []byte
	c := newLogCopier(&out, logFilter{tail: -1})
	err := readRecords(bufio.NewReaderSize(strings.NewReader(log), 16), &pending, c.add)
	c.flush()
	if want := "one\ntwo\nthree\nfive\nunfinished\n" + long + "\nsix\n"; err != nil || out.String() != want {
		t.Errorf("copy: %q, %v; want %q", out.String(), err, want)
	}
}
