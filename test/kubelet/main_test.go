package kubelet

import (
	"fmt"
	"os"
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// env is the binaries, offline config and busybox image TestMain built.
var env harness.Busybox

// TestMain skips the package, before building anything, unless
// BERTH_KUBELET names a kubelet.
func TestMain(m *testing.M) {
	if os.Getenv("BERTH_KUBELET") == "" {
		fmt.Println("test/kubelet: skipping all tests: BERTH_KUBELET is not set (`make test-kubelet` builds kubelet and sets it)")
		os.Exit(0)
	}
	harness.MainBusybox(m, "test/kubelet", &env)
}
