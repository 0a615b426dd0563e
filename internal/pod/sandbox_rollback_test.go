package pod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/oci"
)

// sharedPIDSandboxConfig asks for every step of RunSandbox: its own network
// namespace and one PID namespace for the pod (berth-pause).
func sharedPIDSandboxConfig() *runtimeapi.PodSandboxConfig {
	cfg := goodSandboxConfig()
	cfg.Hostname = "web"
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}}
	return cfg
}

// undoOps are the fake ops that undo a step of RunSandbox.
var undoOps = []string{"unpin", "stop-monitor", "teardown", "kill", "delete"}

// TestRunSandboxRollback fails each step of RunSandbox (docs/architecture.md,
// "RunPodSandbox") in turn and checks that the steps before it were undone,
// newest first, and that no record, name, pod dir or bundle is left.
func TestRunSandboxRollback(t *testing.T) {
	errFake := errors.New("injected failure")
	cases := []struct {
		step    string
		inject  func(t *testing.T, s *Service, f *fakeWorld)
		wantErr string
		// done are the fake ops that ran before the failure (any order:
		// CNI ADD runs beside the monitor and berth-pause); undone the
		// undo ops, in order: the monitor's side's first.
		done, undone []string
	}{
		{step: "1 reserve name", inject: reserveTwin, wantErr: errdefs.ErrAlreadyExists.Error()},
		{step: "2 intent record", inject: blockRecords, wantErr: "record dir"},
		{step: "3 pin namespaces", inject: failOp("pin", errFake), wantErr: "namespaces: injected",
			done: []string{"pin"}},
		{step: "4 start monitor", inject: failOp("launch", errFake), wantErr: "monitor: injected",
			done: []string{"pin", "launch", "setup"}, undone: []string{"teardown", "unpin"}},
		{step: "4 CNI ADD", inject: failOp("setup", errFake), wantErr: "network: injected",
			done:   []string{"pin", "launch", "setup", "run"},
			undone: []string{"kill", "delete", "stop-monitor", "unpin"}},
		{step: "4 berth-pause runc run", inject: failOp("run", errFake), wantErr: "berth-pause: runc run: injected",
			done:   []string{"pin", "launch", "setup", "run"},
			undone: []string{"kill", "delete", "stop-monitor", "teardown", "unpin"}},
		{step: "4 berth-pause runc start (a monitor that predates run)", inject: oldMonitorFailsStart(errFake),
			wantErr: "berth-pause: runc start: injected",
			done:    []string{"pin", "launch", "setup", "run", "start"},
			undone:  []string{"kill", "delete", "stop-monitor", "teardown", "unpin"}},
		{step: "5 pod files", inject: noHostResolvConf, wantErr: "resolv.conf",
			done:   []string{"pin", "launch", "setup", "run"},
			undone: []string{"kill", "delete", "stop-monitor", "teardown", "unpin"}},
		{step: "6 record ready", inject: blockReadyRecord, wantErr: "sandbox.json",
			done:   []string{"pin", "launch", "setup", "run"},
			undone: []string{"kill", "delete", "stop-monitor", "teardown", "unpin"}},
	}
	for _, variant := range []string{"", " in a user namespace"} {
		for _, tc := range cases {
			t.Run(tc.step+variant, func(t *testing.T) {
				if variant != "" && os.Geteuid() != 0 {
					t.Skip("chowns: needs root")
				}
				runRollbackCase(t, tc.inject, tc.wantErr, tc.done, tc.undone, variant != "", tc.step == "1 reserve name")
			})
		}
	}
}

// usernsSandboxConfig is sharedPIDSandboxConfig in a user namespace.
func usernsSandboxConfig() *runtimeapi.PodSandboxConfig {
	cfg := sharedPIDSandboxConfig()
	m := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 65536, Length: 65536}}
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = &runtimeapi.UserNamespace{
		Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
	return cfg
}

// runRollbackCase runs one case of TestRunSandboxRollback.
func runRollbackCase(t *testing.T, inject func(t *testing.T, s *Service, f *fakeWorld), wantErr string,
	wantDone, wantUndone []string, inUserns, twinHoldsName bool) {
	root, state := t.TempDir(), t.TempDir()
	f := newFakeWorld()
	s := newFakeService(t, root, state, f)
	inject(t, s, f)
	cfg := sharedPIDSandboxConfig()
	if inUserns {
		cfg = usernsSandboxConfig()
	}
	{
		{
			id, err := s.RunSandbox(context.Background(), cfg, "")
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("RunSandbox = %q, %v; want an error with %q", id, err, wantErr)
			}
			var done, undone []string
			for _, op := range f.log(true) {
				if slices.Contains(undoOps, op) {
					undone = append(undone, op)
				} else {
					done = append(done, op)
				}
			}
			slices.Sort(done)
			want := slices.Sorted(slices.Values(wantDone))
			if !slices.Equal(done, want) || !slices.Equal(undone, wantUndone) {
				t.Errorf("calls %v: done %v, want %v; undone %v, want %v", f.log(false), done, want, undone, wantUndone)
			}
			checkNoSandboxLeft(t, s, cfg, twinHoldsName)
		}
	}
}

// TestRunSandboxWithFakes is the same run with nothing failing: the
// sandbox is ready and nothing is undone.
func TestRunSandboxWithFakes(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	id, err := s.RunSandbox(context.Background(), sharedPIDSandboxConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := s.Sandbox(id)
	if err != nil || sb.State != SandboxReady || sb.PausePid != fakeInitPid || sb.MonitorPid != fakeMonitorPid ||
		!slices.Equal(sb.IPs, []string{"10.88.0.5"}) {
		t.Fatalf("sandbox %+v, %v", sb, err)
	}
	var onDisk Sandbox
	if err := readSandboxRecord(s.sandboxRecordPath(id), id, &onDisk); err != nil || onDisk.State != SandboxReady {
		t.Errorf("record on disk: %s, %v", onDisk.State, err)
	}
	for _, op := range f.log(true) {
		if slices.Contains(undoOps, op) {
			t.Errorf("%s undone: %v", op, f.log(false))
		}
	}
}

// checkNoSandboxLeft checks that a failed RunSandbox left nothing: no
// record, pod dir, bundle or exit file, and its name is free (but for a
// twin's reservation, which must stay).
func checkNoSandboxLeft(t *testing.T, s *Service, cfg *runtimeapi.PodSandboxConfig, twinHoldsName bool) {
	t.Helper()
	if len(s.userns.held) != 0 {
		t.Errorf("user namespace mappings still held: %v", s.userns.held)
	}
	for _, dir := range []string{s.podsDir(), s.bundlesDir(), s.exitsDir(), s.monitorsDir(), s.usernsDir()} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s left: %v", dir, entries)
		}
	}
	if ids := recordIDs(s.sandboxesDir()); len(ids) != 0 {
		t.Errorf("sandbox records left: %v", ids)
	}
	if len(s.Sandboxes()) != 0 {
		t.Errorf("sandboxes listed: %+v", s.Sandboxes())
	}
	key, held := s.sandboxNames.Get(sandboxName(cfg.GetMetadata()))
	if held != twinHoldsName || (twinHoldsName && key != "twin") {
		t.Errorf("name held %v by %q; want held %v", held, key, twinHoldsName)
	}
}

func failOp(op string, err error) func(*testing.T, *Service, *fakeWorld) {
	return func(_ *testing.T, _ *Service, f *fakeWorld) { f.fail[op] = err }
}

// oldMonitorFailsStart makes the monitor one that predates runc run (it
// only creates) and its runc start fail.
func oldMonitorFailsStart(err error) func(*testing.T, *Service, *fakeWorld) {
	return func(_ *testing.T, _ *Service, f *fakeWorld) { f.oldMonitor, f.fail["start"] = true, err }
}

// reserveTwin makes the name taken by a concurrent twin.
func reserveTwin(t *testing.T, s *Service, _ *fakeWorld) {
	if err := s.sandboxNames.Reserve(sandboxName(sharedPIDSandboxConfig().GetMetadata()), "twin"); err != nil {
		t.Fatal(err)
	}
}

// blockRecords puts a file where the sandbox records dir is: the intent
// record cannot be written, even by root.
func blockRecords(t *testing.T, s *Service, _ *fakeWorld) {
	if err := os.Remove(s.sandboxesDir()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.sandboxesDir(), "not a dir")
}

// noHostResolvConf makes step 6 fail: the pod gives no DNS config and the
// host's resolv.conf is missing.
func noHostResolvConf(t *testing.T, s *Service, _ *fakeWorld) {
	s.cfg.HostResolvConf = filepath.Join(t.TempDir(), "missing")
}

// blockReadyRecord makes the ready record fail to replace the intent: once
// CNI ADD ran, a directory (which rename cannot replace, even for root)
// takes the record file's place.
func blockReadyRecord(t *testing.T, s *Service, f *fakeWorld) {
	f.hook["setup"] = func(id string) {
		path := s.sandboxRecordPath(id)
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		writeFile(t, filepath.Join(path, "blocker"), "")
	}
}

// TestOrphanUsernsDirs: recovery removes the rootfs directories under
// <state>/userns that no record owns (berth-pause's with its mount points),
// keeps those of known pods and containers, and never removes a directory
// that is not empty.
func TestOrphanUsernsDirs(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{s.usernsDir()}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, pod := range []string{"known-pod", "gone-pod"} {
		for _, d := range pauseMountPoints {
			mk(pod, pauseRootfsName, d)
		}
		writeFile(t, filepath.Join(s.usernsDir(), pod, pauseRootfsName, oci.PauseBinary), "")
	}
	mk("known-pod", "known-ctr")
	mk("known-pod", "gone-ctr")
	busy := mk("gone-pod", "busy-ctr")
	writeFile(t, filepath.Join(busy, "file"), "a rootfs that did not unmount")
	s.removeOrphanUsernsDirs(map[string]bool{"known-pod": true, "known-ctr": true})
	for p, want := range map[string]bool{
		"known-pod/pause/proc": true, "known-pod/known-ctr": true, "known-pod/gone-ctr": false,
		"gone-pod/pause": false, "gone-pod/busy-ctr/file": true, "gone-pod": true,
	} {
		_, err := os.Stat(filepath.Join(s.usernsDir(), p))
		if got := err == nil; got != want {
			t.Errorf("%s there: %v, want %v", p, got, want)
		}
	}
}
