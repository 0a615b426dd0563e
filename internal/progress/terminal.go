package progress

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Terminal reports whether f is a terminal that can show redrawn progress,
// and a function returning its current width in columns. TERM=dumb counts
// as no terminal.
func Terminal(f *os.File) (bool, func() int) {
	if os.Getenv("TERM") == "dumb" {
		return false, nil
	}
	if _, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err != nil {
		return false, nil
	}
	return true, func() int {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return 0
		}
		return int(ws.Col)
	}
}

const (
	defaultWidth = 80
	maxBarWidth  = 40
	minBarWidth  = 10
)

// Column layout of a terminal line: name, state, bar, bytes, rate.
const (
	headWidth = 12 + 2 + 11 + 2 // "%-12s  %-11s  "
	tailWidth = 17 + 2 + 9      // "%7s / %-7s  %s"
)

// draw rewrites the block of lines: one per layer, then the total. The
// cursor moves up over the previous block; every line is cut to the width
// so that none wraps and the count stays right.
func (r *Renderer) draw(now time.Time, final bool) {
	width := defaultWidth
	if r.opts.Width != nil {
		if w := r.opts.Width(); w > 0 {
			width = w
		}
	}
	bar := min(maxBarWidth, width-1-headWidth-2-tailWidth)
	lines := make([]string, 0, len(r.layers)+1)
	for _, l := range r.layers {
		lines = append(lines, layerLine(l, now, bar))
	}
	lines = append(lines, r.totalLine(now, bar, final))
	var buf bytes.Buffer
	if r.drawn > 0 {
		fmt.Fprintf(&buf, "\x1b[%dA", r.drawn)
	}
	for _, line := range lines {
		if len(line) > width-1 {
			line = line[:width-1]
		}
		buf.WriteString("\r" + line + "\x1b[K\n")
	}
	r.drawn = len(lines)
	_, _ = r.out.Write(buf.Bytes())
}

// formatLine lays out one line; fraction < 0 draws no bar.
func formatLine(name, state string, fraction float64, bar int, done, total int64, rate string) string {
	line := fmt.Sprintf("%-12s  %-11s  %s", name, state, fitBar(fraction, bar))
	if fraction >= 0 {
		line += fmt.Sprintf("%7s / %-7s  %s", FormatBytes(done), totalOrUnknown(total), rate)
	}
	return strings.TrimRight(line, " ")
}

// layerLine: "0123456789ab  downloading  [=====>    ]  1.2MB / 3.4MB  800kB/s".
func layerLine(l *layer, now time.Time, bar int) string {
	if l.state == Exists {
		return formatLine(shortDigest(l.digest), string(l.state), -1, bar, 0, 0, "")
	}
	rate := ""
	end := now
	if l.state.terminal() {
		end = l.ended
	}
	if d := end.Sub(l.started); d > 0 && l.done > 0 && !l.started.IsZero() {
		rate = FormatRate(float64(l.done) / d.Seconds())
	}
	full := l.state == Done || l.state == Unpacking
	return formatLine(shortDigest(l.digest), string(l.state), fractionOf(l.done, l.total, full), bar, l.done, l.total, rate)
}

// totalLine: "total  ETA 6s  [====>     ]  12MB / 40MB  5.2MB/s", and when
// finished "total  done  40MB in 5.1s (7.8MB/s)".
func (r *Renderer) totalLine(now time.Time, bar int, final bool) string {
	t := r.totals(now)
	if len(r.layers) == 0 { // no layer reported: the time is all there is
		if final {
			return fmt.Sprintf("%-12s  %-11s  in %s%s", "total", r.finalState(), FormatDuration(t.elapsed), r.sizeNote())
		}
		return fmt.Sprintf("%-12s  %-11s  %s elapsed", "total", "pulling", FormatDuration(t.elapsed))
	}
	if final {
		return fmt.Sprintf("%-12s  %-11s  %s in %s (%s)", "total", r.finalState(), FormatBytes(t.done),
			FormatDuration(t.elapsed), FormatRate(t.rate))
	}
	return formatLine("total", "ETA "+eta(t), fractionOf(t.done, t.total, false), bar, t.done, t.total, FormatRate(t.rate))
}

func (r *Renderer) finalState() State {
	if r.failed {
		return Failed
	}
	for _, l := range r.layers {
		if l.state == Failed || !l.state.terminal() {
			return Failed
		}
	}
	return Done
}

func eta(t totals) string {
	if t.total <= 0 || t.rate <= 0 {
		return "?"
	}
	return FormatDuration(time.Duration(float64(t.total-t.done) / t.rate * float64(time.Second)))
}

func totalOrUnknown(n int64) string {
	if n <= 0 {
		return "?"
	}
	return FormatBytes(n)
}

// fractionOf is done/total in [0,1]; full forces 1; an unknown total is 0.
func fractionOf(done, total int64, full bool) float64 {
	switch {
	case full:
		return 1
	case total <= 0:
		return 0
	default:
		return min(float64(done)/float64(total), 1)
	}
}

// fitBar is a bar of n columns plus two spaces, or nothing when fraction < 0
// or n is too small for a useful bar.
func fitBar(fraction float64, n int) string {
	if fraction < 0 || n < minBarWidth {
		return ""
	}
	inner := n - 2
	filled := int(fraction * float64(inner))
	bar := strings.Repeat("=", filled)
	if filled < inner {
		if filled > 0 {
			bar = bar[:filled-1] + ">"
		}
		bar += strings.Repeat(" ", inner-filled)
	}
	return "[" + bar + "]  "
}
