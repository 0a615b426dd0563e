package harness

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/testimage"
)

// Busybox is what a suite that runs docker.io/library/busybox:latest needs,
// made once in a temporary directory by PrepareBusybox.
type Busybox struct {
	BinDir string // berth, berth-monitor, berth-pause (BuildBinaries)
	Config string // berth config: registries served by a dead loopback port
	Layout string // OCI layout of docker.io/library/busybox:latest
}

// PrepareBusybox builds the binaries of the module at ../.. (the suite's
// package directory is the working directory), the offline config and the
// busybox image into tmp.
func PrepareBusybox(tmp string) (Busybox, error) {
	b := Busybox{BinDir: filepath.Join(tmp, "bin"), Layout: filepath.Join(tmp, "layout")}
	if err := BuildBinaries(filepath.Join("..", ".."), b.BinDir); err != nil {
		return b, err
	}
	ref, err := image.NormalizeRef("busybox:latest")
	if err != nil {
		return b, err
	}
	if b.Config, err = WriteOfflineConfig(tmp, ref); err != nil {
		return b, err
	}
	if err := testimage.WriteLayout(b.Layout, testimage.Options{Name: ref}); err != nil {
		return b, fmt.Errorf("test image: %w", err)
	}
	return b, nil
}

// MainBusybox is Main for a suite that needs only PrepareBusybox: it fills
// *b before the tests run.
func MainBusybox(m *testing.M, pkg string, b *Busybox) {
	Main(m, pkg, func(tmp string) (err error) {
		*b, err = PrepareBusybox(tmp)
		return err
	})
}
