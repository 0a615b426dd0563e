package main

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/config"
)

// reserveOverGC says why the image store's reserve stops pulls before
// image garbage collection frees anything, or "": a pull fails with
// FailedPrecondition once less than the reserve (min_free_space) is free,
// and image GC acts only once the disk is high percent full. total is the
// size of the store's filesystem; high 100 turns image GC off.
func reserveOverGC(lim config.ImageLimits, total int64, high int) string {
	reserve := lim.MinFreeBytes
	if lim.MinFreePercent > 0 {
		reserve = int64(float64(total) * lim.MinFreePercent / 100)
	}
	gcFree := total / 100 * int64(100-high)
	if high >= 100 || total <= 0 || reserve <= gcFree {
		return ""
	}
	return fmt.Sprintf("[images] min_free_space keeps %d bytes free on the image filesystem (%d bytes), more than the %d bytes "+
		"free when image garbage collection starts (--image-gc-high-threshold=%d): pulls will fail with FailedPrecondition "+
		"before unused images are removed; lower min_free_space", reserve, total, gcFree, high)
}

// warnReserveOverGC logs reserveOverGC's warning for the store at root.
func warnReserveOverGC(log *slog.Logger, cfg config.Config, root string, high int) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return // the store reports its own errors
	}
	if msg := reserveOverGC(cfg.Images.Limits(), int64(st.Blocks)*st.Bsize, high); msg != "" {
		log.Warn(msg, "store", root)
	}
}
