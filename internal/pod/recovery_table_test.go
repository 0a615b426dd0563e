package pod

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/oci"
	"github.com/berth-dev/berth/internal/runc"
)

// recoveryCase is one row of the recovery table in docs/architecture.md
// ("Crash safety and recovery"): what a start finds, and what recovery must
// make of it.
type recoveryCase struct {
	row   string
	setup func(t *testing.T, s *Service, f *fakeWorld)
	// calls are the fake calls recovery makes, in order, as "<op> <id>"
	// with the ids' first 8 characters.
	calls []string
	// quarantined are the records set aside, by kind/id, with a part of
	// the reason (prefix: the start of each own reason); then every file
	// must still be there, the records only renamed.
	quarantined map[string]string
	prefix      string
	check       func(t *testing.T, s *Service, f *fakeWorld)
}

// Ids of the objects of the recovery cases: a pod, its container, and an
// object that has no record.
var (
	podID    = testID("a")
	ctrID    = testID("b")
	orphanID = testID("e")
)

// TestRecoveryTable runs recovery on each row of the recovery table, with
// fakes for runc, the monitors, the host and CNI: no root needed.
func TestRecoveryTable(t *testing.T) {
	for _, tc := range slices.Concat(sandboxUndoCases(), sandboxNotReadyCases(), containerUndoCases(),
		containerReconcileCases(), quarantineRecoveryCases(), orphanRecoveryCases(), imageVolumeRecoveryCases()) {
		t.Run(tc.row, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			f := newFakeWorld()
			tc.setup(t, newFakeService(t, root, state, f), f)
			f.calls = nil
			before := treeOf(t, root, state)
			s := newFakeService(t, root, state, f) // a daemon start
			recoverService(t, s)
			if got := f.log(false); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			checkQuarantined(t, s, tc.quarantined, tc.prefix)
			if len(tc.quarantined) > 0 {
				checkOnlyRenamed(t, before, treeOf(t, root, state))
			}
			if tc.check != nil {
				tc.check(t, s, f)
			}
		})
	}
}

func sandboxUndoCases() []recoveryCase {
	return []recoveryCase{{
		row: "sandbox record in creating: every side effect undone, record deleted",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxCreating, true)
			// berth's default cgroup parent, empty once its last pod is gone
			if err := os.MkdirAll(filepath.Join(s.cgroupRoot, "cpu", oci.DefaultCgroupParent), 0o700); err != nil {
				t.Fatal(err)
			}
		},
		calls: []string{"wait-plugins aaaaaaaa", "kill aaaaaaaa", "delete aaaaaaaa", "teardown aaaaaaaa",
			"stop-monitor aaaaaaaa", "unpin aaaaaaaa"},
		check: func(t *testing.T, s *Service, f *fakeWorld) {
			checkSandboxGone(t, s)
			if want := filepath.Join(s.podDir(podID), "ns", "net"); f.teardowns[0].NetnsPath != want {
				t.Errorf("CNI DEL netns %q, want the live pin %s", f.teardowns[0].NetnsPath, want)
			}
			if _, err := os.Stat(filepath.Join(s.cgroupRoot, "cpu", oci.DefaultCgroupParent)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("empty default cgroup parent kept: %v", err)
			}
		},
	}, {
		row: "sandbox record in removing, network already down: the rest undone, record deleted",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			rec := putSandbox(t, s, f, SandboxRemoving, false)
			rec.NetworkDown = true
			saveSandboxRecord(t, s, rec)
		},
		calls: []string{"wait-plugins aaaaaaaa", "stop-monitor aaaaaaaa", "unpin aaaaaaaa"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) { checkSandboxGone(t, s) },
	}, {
		row: "creating sandbox whose CNI plugins still run: wait for them, then CNI DEL",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			rec := putSandbox(t, s, f, SandboxCreating, false)
			f.setPinned(rec.NetNS, false) // the daemon died before the pin was recorded live
		},
		calls: []string{"wait-plugins aaaaaaaa", "teardown aaaaaaaa", "stop-monitor aaaaaaaa", "unpin aaaaaaaa"},
		check: func(t *testing.T, s *Service, f *fakeWorld) {
			checkSandboxGone(t, s)
			if f.teardowns[0].NetnsPath != "" {
				t.Errorf("CNI DEL with a dead netns pin %q", f.teardowns[0].NetnsPath)
			}
		},
	}}
}

func sandboxNotReadyCases() []recoveryCase {
	return []recoveryCase{{
		row: "ready sandbox whose net pin is gone: CNI DEL, not ready",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			rec := putSandbox(t, s, f, SandboxReady, false)
			f.setPinned(rec.NetNS, false)
		},
		calls: []string{"teardown aaaaaaaa"},
		check: func(t *testing.T, s *Service, f *fakeWorld) {
			sb := checkSandboxState(t, s, SandboxNotReady)
			if !sb.NetworkDown || f.teardowns[0].NetnsPath != "" {
				t.Errorf("networkDown %v, CNI DEL netns %q", sb.NetworkDown, f.teardowns[0].NetnsPath)
			}
		},
	}, {
		row: "ready sandbox whose berth-pause exited: not ready",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxReady, true)
			writeExit(t, s, podID, 0, time.Now())
		},
		check: func(t *testing.T, s *Service, _ *fakeWorld) { checkSandboxState(t, s, SandboxNotReady) },
	}, {
		row: "ready sandbox whose monitor does not answer: not ready",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxReady, false)
			f.fail["ping"] = errors.New("connection refused")
		},
		calls: []string{"ping aaaaaaaa"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) { checkSandboxState(t, s, SandboxNotReady) },
	}, {
		row: "ready sandbox whose monitor is gone: a new monitor takes it over, it stays ready",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxReady, false)
			f.fail["ping"] = errors.New("connection refused")
			f.gone[fakeMonitorPid] = true
			// The gone monitor counts as launched: the new one gets the next pid.
			f.launches = append(f.launches, monitor.LaunchOptions{PodID: podID})
		},
		calls: []string{"ping aaaaaaaa", "launch aaaaaaaa"},
		check: func(t *testing.T, s *Service, f *fakeWorld) {
			checkSandboxState(t, s, SandboxReady)
			if pid := s.sandboxes[podID].snapshot().MonitorPid; pid == fakeMonitorPid {
				t.Errorf("monitor pid %d: the gone monitor's, want the new one's", pid)
			}
		},
	}}
}

func containerUndoCases() []recoveryCase {
	finished := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []recoveryCase{{
		row:   "container record in creating: runc container, mount and dirs removed, record deleted",
		setup: func(t *testing.T, s *Service, f *fakeWorld) { putPodAndContainer(t, s, f, ContainerCreating) },
		calls: []string{"ping aaaaaaaa", "kill bbbbbbbb", "delete bbbbbbbb", "forget bbbbbbbb", "unmount bbbbbbbb"},
		check: checkContainerGone,
	}, {
		row: "container record in removing (exited): runc delete, mount and dirs removed, record deleted",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			rec := putPodAndContainer(t, s, f, ContainerRemoving)
			rec.FinishedAt = finished
			saveContainerRecord(t, s, rec)
		},
		calls: []string{"ping aaaaaaaa", "delete bbbbbbbb", "forget bbbbbbbb", "unmount bbbbbbbb"},
		check: checkContainerGone,
	}}
}

func containerReconcileCases() []recoveryCase {
	finished := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := finished.Add(-time.Hour)
	return []recoveryCase{{
		row: "running container with an exit file: the exit recorded, true code and time",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerRunning)
			writeExit(t, s, ctrID, 3, finished)
		},
		calls: []string{"ping aaaaaaaa"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			c := checkContainerState(t, s, ContainerExited)
			if c.ExitCode != 3 || !c.FinishedAt.Equal(finished) || c.Reason != ReasonError {
				t.Errorf("exit %d at %v, reason %s", c.ExitCode, c.FinishedAt, c.Reason)
			}
		},
	}, {
		row: "running container without exit file, runc says running: kept as it is",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerRunning)
			f.states[ctrID] = runc.State{ID: ctrID, Pid: fakeInitPid, Status: "running", Created: started}
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerRunning); c.Pid != fakeInitPid {
				t.Errorf("pid %d", c.Pid)
			}
		},
	}, {
		row: "created container without exit file, runc says running: recorded running",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerCreated)
			f.states[ctrID] = runc.State{ID: ctrID, Pid: fakeInitPid, Status: "running", Created: started}
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerRunning); !c.StartedAt.Equal(started) {
				t.Errorf("started at %v, want runc's %v", c.StartedAt, started)
			}
		},
	}, {
		row: "prepared container (runc never ran it) with its bundle: stays created, to be started",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerCreated)
			editRecord(t, s.containerRecordPath(ctrID), "pid", 0)
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerCreated); !c.prepared() {
				t.Errorf("pid %d, want a prepared container", c.Pid)
			}
		},
	}, {
		row: "prepared container whose run the daemon did not record: recorded running with runc's pid",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerCreated)
			editRecord(t, s.containerRecordPath(ctrID), "pid", 0)
			f.states[ctrID] = runc.State{ID: ctrID, Pid: fakeInitPid, Status: "running", Created: started}
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerRunning); c.Pid != fakeInitPid || !c.StartedAt.Equal(started) {
				t.Errorf("pid %d, started at %v; want runc's %d, %v", c.Pid, c.StartedAt, fakeInitPid, started)
			}
		},
	}, {
		row: "prepared container whose bundle is gone (a reboot): exited, reason Unknown",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerCreated)
			editRecord(t, s.containerRecordPath(ctrID), "pid", 0)
			if err := os.Remove(filepath.Join(s.bundlesDir(), ctrID, "config.json")); err != nil {
				t.Fatal(err)
			}
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerExited); c.ExitCode != 255 || c.Reason != ReasonUnknown || !strings.Contains(c.Message, "never started") {
				t.Errorf("exit %d, reason %s, message %q", c.ExitCode, c.Reason, c.Message)
			}
		},
	}, {
		row:   "running container that runc does not know: exited, reason Unknown",
		setup: func(t *testing.T, s *Service, f *fakeWorld) { putPodAndContainer(t, s, f, ContainerRunning) },
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if c := checkContainerState(t, s, ContainerExited); c.ExitCode != 255 || c.Reason != ReasonUnknown {
				t.Errorf("exit %d, reason %s", c.ExitCode, c.Reason)
			}
		},
	}}
}
