package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// TestRecoveryQuarantinesUnreadableRecords restarts the daemon over a
// truncated sandbox record, a sandbox record and a container record of a
// newer version: the good pod is untouched, everything of the bad records
// keeps running as it is (nothing killed, unmounted, unpinned or removed),
// Status lists them, and once a person repairs them they load again.
func TestRecoveryQuarantinesUnreadableRecords(t *testing.T) {
	d := startDaemon(t)
	names := []string{"good", "truncated", "future", "ctr-future"}
	pods := map[string]*counterPod{}
	for _, name := range names {
		p := &counterPod{cfg: podConfig(t, "q-"+name), ctr: shell("counter", counterScript)}
		p.podID = d.runPod(p.cfg)
		p.ip = d.sandboxStatus(p.podID).GetNetwork().GetIp()
		p.ctrID = d.run(p.podID, p.cfg, p.ctr)
		p.pid = d.containerPid(p.ctrID)
		pods[name] = p
	}
	sbRecord := func(id string) string { return filepath.Join(d.Root, "sandboxes", id, "sandbox.json") }
	ctrRecord := func(id string) string { return filepath.Join(d.Root, "containers", id, "container.json") }
	truncatedPath := sbRecord(pods["truncated"].podID)
	original, err := os.ReadFile(truncatedPath)
	if err != nil {
		t.Fatal(err)
	}

	d.Kill9()
	if err := os.Truncate(truncatedPath, int64(len(original)/2)); err != nil {
		t.Fatal(err)
	}
	setRecordVersion(t, sbRecord(pods["future"].podID), 99)
	setRecordVersion(t, ctrRecord(pods["ctr-future"].ctrID), 99)
	d.Start()

	good := pods["good"]
	if sb := d.sandboxStatus(good.podID); sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sb.GetNetwork().GetIp() != good.ip {
		t.Errorf("good pod after restart: %v %q, want READY with %s", sb.GetState(), sb.GetNetwork().GetIp(), good.ip)
	}
	if pid := d.containerPid(good.ctrID); pid != good.pid {
		t.Errorf("good container after restart: pid %d, want %d", pid, good.pid)
	}
	wantListed(t, d, []string{good.podID, pods["ctr-future"].podID}, []string{good.ctrID})
	for _, name := range names[1:] {
		p := pods[name]
		if status, pid := runcState(t, d, p.ctrID); status != "running" || pid != p.pid {
			t.Errorf("container of pod %s: runc says %s pid %d, want running pid %d", name, status, pid, p.pid)
		}
		if !slices.Contains(harness.MountsUnder(filepath.Join(d.State, "bundles", p.ctrID)), filepath.Join(d.State, "bundles", p.ctrID, "rootfs")) {
			t.Errorf("container of pod %s: rootfs no longer mounted", name)
		}
		if _, err := os.Stat(filepath.Join(d.Root, "containers", p.ctrID, "upper")); err != nil {
			t.Errorf("container of pod %s: upper dir: %v", name, err)
		}
		if !slices.Contains(harness.MountsUnder(filepath.Join(d.State, "pods", p.podID)), filepath.Join(d.State, "pods", p.podID, "ns", "net")) {
			t.Errorf("pod %s: netns pin gone", name)
		}
	}
	want := []string{
		"container/" + pods["ctr-future"].ctrID, "container/" + pods["future"].ctrID, "container/" + pods["truncated"].ctrID,
		"sandbox/" + pods["future"].podID, "sandbox/" + pods["truncated"].podID,
	}
	sort.Strings(want)
	if got := quarantinedInStatus(t, d); !slices.Equal(got, want) {
		t.Errorf("Status quarantinedRecords %v, want %v", got, want)
	}
	_, err = d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: pods["ctr-future"].podID})
	wantCode(t, "StopPodSandbox of a pod whose container record is quarantined", err, codes.FailedPrecondition)

	// A person repairs the records, as docs/architecture.md says.
	d.Stop()
	if err := os.WriteFile(truncatedPath, original, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{truncatedPath + ".quarantined", filepath.Join(filepath.Dir(truncatedPath), "QUARANTINED")} {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	}
	for _, path := range []string{sbRecord(pods["future"].podID), ctrRecord(pods["ctr-future"].ctrID)} {
		setRecordVersion(t, path+".quarantined", 1)
		if err := os.Rename(path+".quarantined", path); err != nil {
			t.Fatal(err)
		}
	}
	d.Start()
	if got := quarantinedInStatus(t, d); len(got) != 0 {
		t.Errorf("quarantined after the repair: %v", got)
	}
	for _, name := range names {
		p := pods[name]
		if sb := d.sandboxStatus(p.podID); sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sb.GetNetwork().GetIp() != p.ip {
			t.Errorf("pod %s after the repair: %v %q, want READY with %s", name, sb.GetState(), sb.GetNetwork().GetIp(), p.ip)
		}
		if pid := d.containerPid(p.ctrID); pid != p.pid {
			t.Errorf("container of pod %s after the repair: pid %d, want %d", name, pid, p.pid)
		}
	}
	// The harness's cleanup removes the pods and checks for leftovers.
}

// setRecordVersion rewrites the version of a record file, keeping the rest.
func setRecordVersion(t *testing.T, path string, v int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m["version"] = v
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// wantListed checks that exactly these sandboxes and containers are listed.
func wantListed(t *testing.T, d *daemon, sandboxes, containers []string) {
	t.Helper()
	sbs, err := d.RT.ListPodSandbox(d.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sb := range sbs.GetItems() {
		got = append(got, sb.GetId())
	}
	ctrs, err := d.RT.ListContainers(d.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var gotCtrs []string
	for _, c := range ctrs.GetContainers() {
		gotCtrs = append(gotCtrs, c.GetId())
	}
	for _, l := range [][]string{got, gotCtrs, sandboxes, containers} {
		sort.Strings(l)
	}
	if !slices.Equal(got, sandboxes) || !slices.Equal(gotCtrs, containers) {
		t.Errorf("listed sandboxes %v containers %v, want %v and %v", got, gotCtrs, sandboxes, containers)
	}
}

// runcState asks runc for a container's status and pid.
func runcState(t *testing.T, d *daemon, id string) (string, int) {
	t.Helper()
	out, err := exec.Command(harness.Runc(), "--root", filepath.Join(d.State, "runc"), "state", id).Output()
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err), 0
	}
	var st struct {
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("runc state %s: %v", id, err)
	}
	return st.Status, st.Pid
}

// quarantinedInStatus returns "kind/id" of each record Status lists as
// quarantined, sorted.
func quarantinedInStatus(t *testing.T, d *daemon) []string {
	t.Helper()
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct{ Kind, ID, Path, Reason string }
	if err := json.Unmarshal([]byte(resp.GetInfo()["quarantinedRecords"]), &recs); err != nil {
		t.Fatalf("Status quarantinedRecords %q: %v", resp.GetInfo()["quarantinedRecords"], err)
	}
	out := []string{}
	for _, r := range recs {
		if r.Path == "" || r.Reason == "" {
			t.Errorf("quarantined record without path or reason: %+v", r)
		}
		out = append(out, r.Kind+"/"+r.ID)
	}
	sort.Strings(out)
	return out
}
