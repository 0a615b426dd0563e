package progress

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeClock advances only when told.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }
func digestOf(c byte) string                 { return "sha256:" + strings.Repeat(string(c), 64) }
func fixedWidth(w int) func() int            { return func() int { return w } }
func visible(s string) string                { return strings.ReplaceAll(s, "\x1b", "ESC") }
func mb(n float64) int64                     { return int64(n * 1e6) }

// step is one scripted moment of a pull: advance the clock, then send the
// events, then (on a terminal) tick.
type step struct {
	after  time.Duration
	events []Event
}

// scriptedPull: layer a (4 MB) downloads and unpacks, b is already present,
// c (2 MB) starts with an unknown size.
var scriptedPull = []step{
	{0, []Event{{State: Downloading}, {Layer: digestOf('a'), State: Waiting, Total: mb(4)},
		{Layer: digestOf('b'), State: Waiting, Total: mb(1)}, {Layer: digestOf('c'), State: Waiting}}},
	{100 * time.Millisecond, []Event{{Layer: digestOf('b'), State: Exists, Total: mb(1)},
		{Layer: digestOf('a'), State: Downloading, Done: 0, Total: mb(4)},
		{Layer: digestOf('c'), State: Downloading}}},
	{time.Second, []Event{{Layer: digestOf('a'), State: Downloading, Done: mb(1), Total: mb(4)},
		{Layer: digestOf('c'), State: Downloading, Done: mb(0.5), Total: mb(2)}}},
	{time.Second, []Event{{Layer: digestOf('a'), State: Downloading, Done: mb(3), Total: mb(4)},
		{Layer: digestOf('c'), State: Downloading, Done: mb(1.5), Total: mb(2)},
		{Layer: digestOf('c'), State: Downloading, Done: mb(1), Total: mb(2)}}}, // late, smaller
	{500 * time.Millisecond, []Event{{Layer: digestOf('c'), State: Unpacking, Done: mb(2), Total: mb(2)}}},
	{200 * time.Millisecond, []Event{{Layer: digestOf('c'), State: Done, Done: mb(2), Total: mb(2)},
		{Layer: digestOf('a'), State: Unpacking, Done: mb(4), Total: mb(4)}}},
	{300 * time.Millisecond, []Event{{Layer: digestOf('a'), State: Done, Done: mb(4), Total: mb(4)},
		{Layer: digestOf('a'), State: Downloading, Done: mb(4), Total: mb(4)}, // late
		{State: Done}}},
}

func runScript(r *Renderer, clock *fakeClock, steps []step, finishErr error) {
	for _, s := range steps {
		clock.advance(s.after)
		for _, ev := range s.events {
			r.Update(ev)
		}
		r.Tick()
	}
	clock.advance(50 * time.Millisecond)
	r.Finish(finishErr)
	r.Finish(finishErr) // a second Finish prints nothing
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update to create it)", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestPlainGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		err    error
		steps  []step
	}{
		{"plain.golden", nil, scriptedPull},
		{"plain-failed.golden", errors.New("registry gone"), scriptedPull[:4]},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			clock := newFakeClock()
			var out bytes.Buffer
			r := New(&out, Options{Ref: "127.0.0.1:5000/test/busybox:latest", Now: clock.Now})
			runScript(r, clock, tc.steps, tc.err)
			if strings.ContainsRune(out.String(), '\x1b') {
				t.Errorf("plain output has an escape sequence:\n%q", out.String())
			}
			checkGolden(t, tc.golden, out.String())
		})
	}
}

func TestFailureBeforeAnyLayerPrintsNothing(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		clock := newFakeClock()
		var out bytes.Buffer
		r := New(&out, Options{Ref: "x", Terminal: terminal, Now: clock.Now})
		r.Update(Event{State: Downloading})
		r.Finish(errors.New("manifest unknown"))
		if got := out.String(); got != "pulling x\n" {
			t.Errorf("terminal=%v: output %q; want only the header", terminal, got)
		}
	}
}

func TestTerminalGolden(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(&out, Options{Ref: "127.0.0.1:5000/test/busybox:latest", Terminal: true,
		Width: fixedWidth(100), Now: clock.Now})
	runScript(r, clock, scriptedPull, nil)
	checkGolden(t, "terminal.golden", visible(out.String()))
}

// screen replays cursor-up, carriage return, erase-line and newline onto a
// grid of lines, as a terminal shows them.
func screen(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	row, col := 0, 0
	put := func(c byte) {
		for len(lines) <= row {
			lines = append(lines, "")
		}
		line := []byte(lines[row])
		for len(line) <= col {
			line = append(line, ' ')
		}
		line[col] = c
		lines[row] = string(line)
		col++
	}
	for i := 0; i < len(out); i++ {
		switch c := out[i]; c {
		case '\x1b':
			end := strings.IndexAny(out[i:], "AK")
			if end < 0 || out[i+1] != '[' {
				t.Fatalf("unexpected escape at %d: %q", i, out[i:])
			}
			if out[i+end] == 'A' {
				var n int
				for _, d := range out[i+2 : i+end] {
					n = n*10 + int(d-'0')
				}
				row -= n
			} else if row < len(lines) && col < len(lines[row]) {
				lines[row] = lines[row][:col]
			}
			i += end
		case '\r':
			col = 0
		case '\n':
			row, col = row+1, 0
		default:
			put(c)
		}
	}
	return lines
}

func TestTerminalFinalScreenShowsEveryLayerDone(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(&out, Options{Terminal: true, Width: fixedWidth(72), Now: clock.Now})
	runScript(r, clock, scriptedPull, nil)
	lines := screen(t, out.String())
	want := []string{"aaaaaaaaaaaa  done", "bbbbbbbbbbbb  exists", "cccccccccccc  done", "total         done"}
	if len(lines) != len(want) {
		t.Fatalf("screen has %d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, prefix := range want {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], prefix)
		}
		if len(lines[i]) > 71 {
			t.Errorf("line %d is %d columns wide, terminal has 72: %q", i, len(lines[i]), lines[i])
		}
	}
	if !strings.Contains(lines[3], "6MB in 3.1s (1.9MB/s)") {
		t.Errorf("total line %q: want 6MB fetched in 3.1s", lines[3])
	}
}

func TestTerminalUpdateDoesNotDraw(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(&out, Options{Terminal: true, Now: clock.Now})
	for i := range 1000 {
		r.Update(Event{Layer: digestOf('a'), State: Downloading, Done: int64(i), Total: 1000})
	}
	if out.Len() != 0 {
		t.Fatalf("Update wrote %d bytes on a terminal; only Tick and Finish draw", out.Len())
	}
	r.Tick()
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("one Tick drew %d lines, want 2 (one layer, total)", got)
	}
}

func TestNarrowTerminalDropsTheBar(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(&out, Options{Terminal: true, Width: fixedWidth(40), Now: clock.Now})
	r.Update(Event{Layer: digestOf('a'), State: Downloading, Done: 10, Total: 100})
	r.Tick()
	for _, line := range screen(t, out.String()) {
		if strings.Contains(line, "[") || len(line) > 39 {
			t.Errorf("line %q: want no bar and at most 39 columns", line)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0B", 999: "999B", 1000: "1kB", 999_600: "1MB", 2_234_567: "2.23MB",
		104_857_600: "105MB", -5: "0B", 1_500_000_000_000: "1.5TB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond: "0.4s", 12345 * time.Millisecond: "12.3s",
		245 * time.Second: "4m05s", 127 * time.Minute: "2h07m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// A pull whose source reports no layers shows its time and the image's
// size, never bytes it does not know; Start counts from the pull's start.
func TestPullWithoutLayers(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(&out, Options{Ref: "busybox", Now: clock.Now, Start: clock.now.Add(-2 * time.Second)})
	r.Update(Event{State: Downloading})
	clock.advance(1200 * time.Millisecond)
	r.Update(Event{State: Done, Done: 2_100_000, Total: 2_100_000})
	r.Finish(nil)
	if got, want := out.String(), "pulling busybox\npulled busybox in 3.2s (2.1MB)\n"; got != want {
		t.Errorf("plain output %q, want %q", got, want)
	}

	clock = newFakeClock()
	out.Reset()
	r = New(&out, Options{Ref: "busybox", Terminal: true, Width: fixedWidth(80), Now: clock.Now})
	r.Update(Event{State: Downloading})
	clock.advance(500 * time.Millisecond)
	r.Tick()
	if lines := screen(t, out.String()); len(lines) != 2 || !strings.HasPrefix(lines[1], "total         pulling      0.5s elapsed") {
		t.Errorf("terminal while pulling: %q", lines)
	}
	clock.advance(time.Second)
	r.Finish(errors.New("not found"))
	if lines := screen(t, out.String()); len(lines) != 2 || !strings.HasPrefix(lines[1], "total         failed       in 1.5s") {
		t.Errorf("terminal after a failure: %q; want the elapsed line replaced by the failure", lines)
	}
}
