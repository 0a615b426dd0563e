package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/cluster/conformance"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
)

// conformanceDeps is where `make conformance-deps` put the programs of the
// conformance images; unset, the node conformance specs do not run.
func conformanceDeps() string { return os.Getenv("BERTH_CONFORMANCE_DEPS") }

// serveConformanceImages builds the images the node conformance specs pull,
// pushes them into a local registry that lives as long as the test, and
// points berth's registry.k8s.io at it (hostsDir is the offline config's
// hosts_dir; berth reads it at each pull).
func serveConformanceImages(t *testing.T, kubeBin, hostsDir string) {
	start := time.Now()
	images, err := conformance.BuildAll(conformance.HostPrograms(kubeBin, conformanceDeps()))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.StartT(t, registry.Options{})
	if err := conformance.Push(reg, images); err != nil {
		t.Fatal(err)
	}
	if err := conformance.WriteHosts(hostsDir, reg.Host); err != nil {
		t.Fatal(err)
	}
	t.Logf("registry %s serves %d conformance images, built and pushed in %v", reg.Host, len(images),
		time.Since(start).Round(time.Millisecond))
}

// testConformance runs Kubernetes' [NodeConformance] specs against the
// cluster, 8 ginkgo processes, and compares the outcome with
// conformance/results.txt. With BERTH_CONFORMANCE_SLOW=1 it runs the
// [Slow] ones instead, which CI skips for time, against
// conformance/results-slow.txt.
func (c *cluster) testConformance(t *testing.T) {
	kubeBin := os.Getenv("BERTH_KUBE_BIN")
	f, err := os.Open(filepath.Join("conformance", "skip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	skips, err := conformance.ParseSkips(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	reportDir := os.Getenv("BERTH_CONFORMANCE_REPORT")
	if reportDir == "" {
		reportDir = t.TempDir()
		harness.KeepOnFailure(t, reportDir)
	}
	opts := conformance.Options{
		E2ETest: filepath.Join(kubeBin, "e2e.test"), Ginkgo: filepath.Join(kubeBin, "ginkgo"), Procs: 8,
		Kubeconfig: c.cp.AdminKubeconfig, Kubectl: c.kubectlBin, ReportDir: reportDir,
		Timeout: 40 * time.Minute, Skips: skips,
	}
	if os.Getenv("BERTH_CONFORMANCE_SLOW") == "1" {
		opts.Focus, opts.Results, opts.Timeout = conformance.SlowFocus, "results-slow.txt", 3*time.Hour
		opts.Skips = conformance.WithoutSkip(skips, "[Slow]")
	}
	ctx, stop := c.watchdog(t)
	defer stop()
	conformance.Run(ctx, t, "conformance", opts)
}
