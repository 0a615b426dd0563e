package e2e

import (
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// Built once by TestMain.
var (
	binDir        string // berth, berth-monitor, berth-pause
	busyboxLayout string // OCI layout of docker.io/library/busybox:latest
	offlineConfig string // berth config: registries served by a dead loopback port
)

func TestMain(m *testing.M) { harness.Main(m, "test/e2e", prepare) }

// prepare builds the binaries and the busybox image into tmp.
func prepare(tmp string) error {
	b, err := harness.PrepareBusybox(tmp)
	binDir, offlineConfig, busyboxLayout = b.BinDir, b.Config, b.Layout
	return err
}
