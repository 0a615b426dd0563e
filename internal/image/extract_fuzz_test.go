package image

import (
	"archive/tar"
	"bytes"
	"os"
	"testing"
)

// FuzzExtract feeds arbitrary tar streams to the extractor and checks that
// it neither panics nor touches anything outside the layer dir.
func FuzzExtract(f *testing.F) {
	seeds := [][]*tar.Header{
		{reg("../evil")},
		{reg("/abs-evil")},
		{symlink("esc", "../outside"), reg("esc/pwned")},
		{symlink("esc", "/"), reg("esc/pwned")},
		{dir("d/"), symlink("d/up", "../.."), reg("d/up/x")},
		{reg("f"), hardlink("hl", "f"), hardlink("h2", "../outside/secret")},
		{symlink("f", "../outside/secret"), reg("f")},
		{dir("d/"), reg("d/.wh.x"), reg("d/.wh..wh..opq"), reg(".wh..")},
		{{Typeflag: tar.TypeChar, Name: "dev/null", Devmajor: 1, Devminor: 3}},
		{{Typeflag: tar.TypeFifo, Name: "fifo"}},
	}
	for _, s := range replaceArchives() {
		seeds = append(seeds, s)
	}
	for _, s := range seeds {
		f.Add(tarOf(f, s...))
	}
	f.Add([]byte("not a tar"))
	// tmpfs when available: ext4 inode churn makes thousands of tiny
	// sandboxes per second slow.
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sb := newSandboxIn(t, base)
		_ = applyTar(bytes.NewReader(data), sb.layer, testLimits)
		if err := sb.unchanged(); err != nil {
			t.Fatal(err)
		}
	})
}
