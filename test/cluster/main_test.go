package cluster

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
// BERTH_KUBE_BIN names a directory of Kubernetes binaries and BERTH_ETCD
// an etcd.
func TestMain(m *testing.M) {
	if os.Getenv("BERTH_KUBE_BIN") == "" || os.Getenv("BERTH_ETCD") == "" {
		fmt.Println("test/cluster: skipping all tests: BERTH_KUBE_BIN or BERTH_ETCD is not set (`make test-cluster` builds them and sets both)")
		os.Exit(0)
	}
	harness.Main(m, "test/cluster", prepare)
}

// prepare builds the binaries and the busybox image into tmp.
func prepare(tmp string) error {
	b, err := harness.PrepareBusybox(tmp)
	binDir, offlineConfig, busyboxLayout = b.BinDir, b.Config, b.Layout
	return err
}
