package integration

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// runcList lists the container ids runc binary knows under root.
func runcList(t *testing.T, binary, root string) []string {
	t.Helper()
	out, err := exec.Command(binary, "--root", root, "list", "-q").Output()
	if err != nil {
		t.Fatalf("%s --root %s list: %v", binary, root, err)
	}
	return strings.Fields(string(out))
}

// TestSecondRuntimeHandler: the default table's runc-system handler (the
// system's runc) runs a pod whose sandbox names it: Status lists it with
// its runc, its containers live under its own runc root and not the
// default's, exec and stop and remove go through it; an unknown handler is
// InvalidArgument naming the known ones.
func TestSecondRuntimeHandler(t *testing.T) {
	system, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("no system runc in PATH")
	}
	d := startDaemon(t)
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range resp.GetRuntimeHandlers() {
		names = append(names, h.GetName())
	}
	if strings.Join(names, ",") != ",runc,runc-system" {
		t.Errorf("Status handlers %q, want \"\", runc, runc-system", names)
	}
	var info struct {
		Handlers map[string]struct{ Path string } `json:"runtimeHandlers"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["runtime"]), &info); err != nil || info.Handlers["runc-system"].Path != system {
		t.Errorf("runtime info %s (%v): want runc-system's runc %s", resp.GetInfo()["runtime"], err, system)
	}

	podCfg := podConfig(t, "handler")
	sb, err := d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: podCfg, RuntimeHandler: "runc-system"})
	if err != nil {
		t.Fatal(err)
	}
	podID := sb.GetPodSandboxId()
	d.KnownIDs[podID] = true
	if st := d.sandboxStatus(podID); st.GetRuntimeHandler() != "runc-system" {
		t.Errorf("PodSandboxStatus handler %q, want runc-system", st.GetRuntimeHandler())
	}
	id := d.run(podID, podCfg, sleeper("app"))
	root := filepath.Join(d.State, "runtimes", "runc-system")
	if ids := runcList(t, system, root); !strings.Contains(strings.Join(ids, " "), id) {
		t.Errorf("runc-system's root lists %v, want the container %s", ids, id)
	}
	if ids := runcList(t, harness.Runc(), filepath.Join(d.State, "runc")); strings.Contains(strings.Join(ids, " "), id) {
		t.Errorf("the default runc's root lists the container too: %v", ids)
	}
	if out, err := d.execSync(id, 10, "echo", "through runc-system"); err != nil || strings.TrimSpace(string(out.GetStdout())) != "through runc-system" {
		t.Errorf("exec: %v %v", out, err)
	}
	d.stopAndRemovePod(podID)
	if ids := runcList(t, system, root); len(ids) != 0 {
		t.Errorf("runc-system's root after the pod's removal: %v", ids)
	}

	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: podConfig(t, "kata"), RuntimeHandler: "kata"})
	if msg := wantCode(t, "RunPodSandbox(kata)", err, codes.InvalidArgument); !strings.Contains(msg, `unknown handler "kata" (berth serves "", "runc", "runc-system")`) {
		t.Errorf("RunPodSandbox(kata): %q, want it to name the known handlers", msg)
	}
}
