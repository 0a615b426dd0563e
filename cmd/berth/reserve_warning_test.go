package main

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/config"
)

// The default reserve (1 GiB) outgrows the 15% image GC leaves on a disk
// under about 6.7 GiB; a percentage below it, a large disk or GC off say
// nothing.
func TestReserveOverGC(t *testing.T) {
	gib := int64(1 << 30)
	for _, tc := range []struct {
		name  string
		lim   config.ImageLimits
		total int64
		high  int
		warn  bool
	}{
		{"1GiB on 4GiB", config.ImageLimits{MinFreeBytes: gib}, 4 * gib, 85, true},
		{"1GiB on 100GiB", config.ImageLimits{MinFreeBytes: gib}, 100 * gib, 85, false},
		{"5% on 4GiB", config.ImageLimits{MinFreePercent: 5}, 4 * gib, 85, false},
		{"20% on 4GiB", config.ImageLimits{MinFreePercent: 20}, 4 * gib, 85, true},
		{"GC off", config.ImageLimits{MinFreeBytes: gib}, 4 * gib, 100, false},
		{"no reserve", config.ImageLimits{}, 4 * gib, 85, false},
	} {
		msg := reserveOverGC(tc.lim, tc.total, tc.high)
		if (msg != "") != tc.warn || (tc.warn && !strings.Contains(msg, "min_free_space")) {
			t.Errorf("%s: %q; want a warning: %v", tc.name, msg, tc.warn)
		}
	}
	if got := reserveOverGC(config.Config{}.Images.Limits(), 0, 85); got != "" {
		t.Errorf("unknown size: %q", got)
	}
}
