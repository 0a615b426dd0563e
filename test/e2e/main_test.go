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

func TestMain(m *testing.M) {
	harness.Main(m, "test/e2e", func(tmp string) (err error) {
		if env, err = harness.PrepareBusybox(tmp); err != nil {
			return err
		}
		containerdImages = filepath.Join(tmp, "containerd-images.tar")
		return writeContainerdImages(containerdImages, filepath.Join(env.BinDir, "berth-pause"))
	})
}
