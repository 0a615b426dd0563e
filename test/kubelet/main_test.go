package kubelet

import (
	"fmt"
	"os"
	"testing"

	"github.com/berth-dev/berth/test/harness"
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
	b, err := harness.PrepareBusybox(tmp)
	binDir, offlineConfig, busyboxLayout = b.BinDir, b.Config, b.Layout
	return err
}
