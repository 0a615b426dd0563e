package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/runc"
	"github.com/berth-dev/berth/test/harness"
)

// TestStatusNamesThePinnedRunc: berth serve runs the runc beside it
// (berth-runc, the pinned one the harness copies there from
// BERTH_TEST_RUNC), and Status verbose info names its path and version as
// `runc --version` of that file says it.
func TestStatusNamesThePinnedRunc(t *testing.T) {
	pinned := os.Getenv("BERTH_TEST_RUNC")
	if pinned == "" {
		t.Skip("BERTH_TEST_RUNC is not set (make builds the pinned runc and sets it)")
	}
	out, err := exec.Command(pinned, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := runc.ParseVersion(string(out))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		OCIRuntimePath    string `json:"ociRuntimePath"`
		OCIRuntimeVersion string `json:"ociRuntimeVersion"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["runtime"]), &info); err != nil {
		t.Fatalf("runtime info %q: %v", resp.GetInfo()["runtime"], err)
	}
	if filepath.Base(info.OCIRuntimePath) != "berth-runc" || info.OCIRuntimeVersion != want.Version {
		t.Errorf("Status runs runc %q version %q; want berth-runc beside berth, version %s (%s)",
			info.OCIRuntimePath, info.OCIRuntimeVersion, want.Version, harness.Runc())
	}
}
