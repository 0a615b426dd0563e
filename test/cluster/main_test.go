package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// env is the binaries, offline config and busybox image TestMain built.
var env harness.Busybox

// TestMain skips the package, before building anything, unless
// BERTH_KUBE_BIN names a directory of Kubernetes binaries and BERTH_ETCD
// an etcd.
func TestMain(m *testing.M) {
	if os.Getenv("BERTH_KUBE_BIN") == "" || os.Getenv("BERTH_ETCD") == "" {
		fmt.Println("test/cluster: skipping all tests: BERTH_KUBE_BIN or BERTH_ETCD is not set (`make test-cluster` builds them and sets both)")
		os.Exit(0)
	}
	harness.MainBusybox(m, "test/cluster", &env)
}
