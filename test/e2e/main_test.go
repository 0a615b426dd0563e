package e2e

import (
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// env is the binaries, offline config and busybox image TestMain built.
var env harness.Busybox

// containerdImages is the archive of the images containerd runs
// (writeContainerdImages).
var containerdImages string

// bareLayout is the OCI layout of bareRef (bareImage), which berth serve
// imports beside busybox.
var bareLayout string

func TestMain(m *testing.M) {
	harness.Main(m, "test/e2e", func(tmp string) (err error) {
		if env, err = harness.PrepareBusybox(tmp); err != nil {
			return err
		}
		pause := filepath.Join(env.BinDir, "berth-pause")
		bareLayout = filepath.Join(tmp, "bare-layout")
		if err := writeBareLayout(bareLayout, pause); err != nil {
			return err
		}
		containerdImages = filepath.Join(tmp, "containerd-images.tar")
		return writeContainerdImages(containerdImages, pause)
	})
}
