package e2e

import (
	"testing"

	"github.com/berth-dev/berth/test/harness"
)

// env is the binaries, offline config and busybox image TestMain built.
var env harness.Busybox

func TestMain(m *testing.M) { harness.MainBusybox(m, "test/e2e", &env) }
