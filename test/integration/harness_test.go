package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// Built once by TestMain.
var (
	binDir      string // berth, berth-monitor, berth-pause
	layoutDir   string // OCI layout of the busybox test image
	stopLayout  string // OCI layout of the same image tagged stopImage, StopSignal SIGUSR1
	busyboxRef  string // fully qualified name of the test image
	stopImage   string // fully qualified name of the second test image
	emptyConfig string // the offline berth config (harness.WriteOfflineConfig): the host's is never read
)

func TestMain(m *testing.M) { harness.Main(m, "test/integration", prepare) }

// prepare builds the binaries (harness.BuildBinaries: with
// BERTH_TEST_RACE=1 the daemon has the race detector, and a reported race
// fails the test) and the test images into tmp.
func prepare(tmp string) error {
	binDir = filepath.Join(tmp, "bin")
	if err := harness.BuildBinaries(filepath.Join("..", ".."), binDir); err != nil {
		return err
	}
	var err error
	if busyboxRef, err = image.NormalizeRef("busybox:latest"); err != nil {
		return err
	}
	if emptyConfig, err = harness.WriteOfflineConfig(tmp, busyboxRef, "berth.test"); err != nil {
		return err
	}
	stopImage = "berth.test/busybox:stop"
	layoutDir = filepath.Join(tmp, "layout")
	if err := testimage.WriteLayout(layoutDir, testimage.Options{Name: busyboxRef}); err != nil {
		return fmt.Errorf("test image: %w", err)
	}
	stopLayout = filepath.Join(tmp, "layout-stop")
	if err := testimage.WriteLayout(stopLayout, testimage.Options{Name: stopImage, StopSignal: "SIGUSR1"}); err != nil {
		return fmt.Errorf("test image %s: %w", stopImage, err)
	}
	return nil
}

// daemon is one `berth serve` of test/harness (its own directories and
// network, the leftover checks at cleanup) with the CRI helpers of these
// tests as methods.
type daemon struct {
	*harness.Daemon
}

// daemonOption changes a daemon's options before it first starts.
type daemonOption func(t *testing.T, o *harness.Options)

// withPluginType replaces the bridge plugin's type, e.g. with one that does
// not exist.
func withPluginType(typ string) daemonOption {
	return func(_ *testing.T, o *harness.Options) { o.PluginType = typ }
}

// startDaemon starts a daemon with the offline config and the test image
// imported; its cleanup removes every pod and asserts that nothing is left
// behind.
func startDaemon(t *testing.T, opts ...daemonOption) *daemon {
	t.Helper()
	o := harness.Options{BinDir: binDir, Config: emptyConfig, Layouts: []string{layoutDir}}
	for _, opt := range opts {
		opt(t, &o)
	}
	return &daemon{harness.Start(t, o)}
}

// importImage runs `berth image import` on an OCI layout.
func (d *daemon) importImage(layout string) {
	d.T.Helper()
	d.MustBerth("image", "import", layout)
}

// ctx returns a context for one RPC.
func (d *daemon) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	d.T.Cleanup(cancel)
	return ctx
}

func splitLines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }
