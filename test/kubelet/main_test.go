package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// Built once by TestMain.
var (
	binDir        string // berth, berth-monitor, berth-pause
	busyboxLayout string // OCI layout of docker.io/library/busybox:latest
	offlineConfig string // berth config: registries served by a dead loopback port
)

// TestMain skips the package, before building anything, unless
// BERTH_KUBELET names a kubelet.
func TestMain(m *testing.M) {
	if os.Getenv("BERTH_KUBELET") == "" {
		fmt.Println("test/kubelet: skipping all tests: BERTH_KUBELET is not set (`make test-kubelet` builds kubelet and sets it)")
		os.Exit(0)
	}
	harness.Main(m, "test/kubelet", prepare)
}

// prepare builds the binaries and the busybox image into tmp.
func prepare(tmp string) error {
	binDir = filepath.Join(tmp, "bin")
	if err := harness.BuildBinaries(filepath.Join("..", ".."), binDir); err != nil {
		return err
	}
	ref, err := image.NormalizeRef("busybox:latest")
	if err != nil {
		return err
	}
	if offlineConfig, err = harness.WriteOfflineConfig(tmp, ref); err != nil {
		return err
	}
	busyboxLayout = filepath.Join(tmp, "layout")
	if err := testimage.WriteLayout(busyboxLayout, testimage.Options{Name: ref}); err != nil {
		return fmt.Errorf("test image: %w", err)
	}
	return nil
}
