package progress

import (
	"fmt"
	"strconv"
	"time"
)

var byteUnits = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}

// FormatBytes writes n with three significant digits in decimal units, as
// crictl and docker show sizes: "0B", "700kB", "2.23MB", "105MB".
func FormatBytes(n int64) string {
	f := float64(max(n, 0))
	i := 0
	for i < len(byteUnits)-1 && f >= 999.5 {
		f /= 1000
		i++
	}
	return strconv.FormatFloat(f, 'g', 3, 64) + byteUnits[i]
}

// FormatRate is FormatBytes per second.
func FormatRate(bytesPerSecond float64) string {
	return FormatBytes(int64(bytesPerSecond)) + "/s"
}

// FormatDuration writes d as "0.4s", "12.3s", "4m05s" or "2h07m".
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", max(d, 0).Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}
