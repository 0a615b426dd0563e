package pod

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/store"
)

func quarantineRecoveryCases() []recoveryCase {
	truncatedPod := func(t *testing.T, s *Service, f *fakeWorld) {
		putSandbox(t, s, f, SandboxReady, true)
		truncate(t, s.sandboxRecordPath(podID), 40)
	}
	return []recoveryCase{{
		row:         "unusable sandbox record (truncated): quarantined, nothing touched",
		setup:       truncatedPod,
		quarantined: map[string]string{"sandbox/" + podID: "corrupt"},
	}, {
		row: "unusable sandbox record (a newer version): quarantined, nothing touched",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxReady, false)
			setVersion(t, s.sandboxRecordPath(podID), recordVersion+1)
		},
		quarantined: map[string]string{"sandbox/" + podID: "newer"},
	}, {
		row: "unusable sandbox record (unknown state): quarantined, nothing touched",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxCreating, false)
			editRecord(t, s.sandboxRecordPath(podID), "state", "paused")
		},
		quarantined: map[string]string{"sandbox/" + podID: "field state"},
	}, {
		row: "unusable sandbox record (id not its directory's): quarantined, nothing touched",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putSandbox(t, s, f, SandboxRemoving, false)
			editRecord(t, s.sandboxRecordPath(podID), "id", testID("c"))
		},
		quarantined: map[string]string{"sandbox/" + podID: "field id"},
	}, {
		row: "unusable container record (config does not decode): quarantined, nothing touched",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerCreating)
			corruptConfig(t, s.containerRecordPath(ctrID))
		},
		calls:       []string{"ping aaaaaaaa"},
		quarantined: map[string]string{"container/" + ctrID: "field config"},
	}, {
		row: "readable container record whose sandbox is quarantined: left alone",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerRunning)
			truncate(t, s.sandboxRecordPath(podID), 40)
		},
		quarantined: map[string]string{"sandbox/" + podID: "corrupt", "container/" + ctrID: "is quarantined"},
	}, {
		row: "record dir holding a quarantined record and no record: stays quarantined",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			truncatedPod(t, s, f)
			recoverService(t, s) // the earlier start
		},
		quarantined: map[string]string{"sandbox/" + podID: "corrupt"},
		prefix:      "quarantined by an earlier start: ",
	}}
}

func orphanRecoveryCases() []recoveryCase {
	return []recoveryCase{{
		row: "container whose sandbox record is gone: cleaned up and deleted",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putPodAndContainer(t, s, f, ContainerRunning)
			if err := os.RemoveAll(filepath.Dir(s.sandboxRecordPath(podID))); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(s.podDir(podID)); err != nil {
				t.Fatal(err)
			}
		},
		calls: []string{"kill bbbbbbbb", "delete bbbbbbbb", "unmount bbbbbbbb"},
		check: checkContainerGone,
	}, {
		row: "bundle dir without record: runc container deleted, unmounted, removed",
		setup: func(t *testing.T, s *Service, _ *fakeWorld) {
			writeFile(t, filepath.Join(s.bundlesDir(), orphanID, "rootfs", "bin"), "x")
		},
		calls: []string{"kill eeeeeeee", "delete eeeeeeee", "unmount eeeeeeee"},
		check: checkOrphanGone,
	}, {
		row: "pod dir without record: unpinned, removed",
		setup: func(t *testing.T, s *Service, _ *fakeWorld) {
			writeFile(t, filepath.Join(s.podDir(orphanID), "ns", "net"), "")
		},
		calls: []string{"unpin eeeeeeee"},
		check: checkOrphanGone,
	}, {
		row: "container dir without record (a removal cut short): unmounted, removed",
		setup: func(t *testing.T, s *Service, _ *fakeWorld) {
			writeFile(t, filepath.Join(s.containersDir(), orphanID, "upper", "data"), "x")
			writeFile(t, filepath.Join(s.bundlesDir(), orphanID, "rootfs", "bin"), "x")
		},
		calls: []string{"unmount eeeeeeee"},
		check: checkOrphanGone,
	}}
}

// putSandbox writes sandbox podID as RunSandbox leaves it in state: record,
// live pins, pod files, and berth-pause's bundle when pause.
func putSandbox(t *testing.T, s *Service, f *fakeWorld, state SandboxState, pause bool) *Sandbox {
	t.Helper()
	rec := goodSandboxRecord(podID)
	rec.State, rec.HostNetwork = state, false
	rec.MonitorSocket, rec.MonitorPid = s.monitorSocket(podID), fakeMonitorPid
	ns, err := f.PinNamespaces(network.PinOptions{Dir: filepath.Join(s.podDir(podID), "ns"), Net: true, IPC: true, UTS: true})
	if err != nil {
		t.Fatal(err)
	}
	rec.NetNS, rec.IPCNS, rec.UTSNS = ns.Net, ns.IPC, ns.UTS
	rec.IPs = []string{"10.88.0.5"}
	rec.HostnamePath = filepath.Join(s.podDir(podID), "hostname")
	writeFile(t, rec.HostnamePath, "web\n")
	if pause {
		rec.PausePid = fakeInitPid
		writeFile(t, filepath.Join(s.bundlesDir(), podID, "config.json"), "{}")
	}
	saveSandboxRecord(t, s, &rec)
	return &rec
}

// putPodAndContainer writes a ready sandbox podID and its container ctrID
// in state, with its bundle, rootfs and upper dir.
func putPodAndContainer(t *testing.T, s *Service, f *fakeWorld, state ContainerState) *Container {
	t.Helper()
	putSandbox(t, s, f, SandboxReady, false)
	rec := goodContainerRecord(ctrID, podID)
	rec.State, rec.FinishedAt, rec.Pid = state, time.Time{}, fakeInitPid
	rec.Bundle = filepath.Join(s.bundlesDir(), ctrID)
	rec.Rootfs = filepath.Join(rec.Bundle, "rootfs")
	rec.Dir = filepath.Join(s.containersDir(), ctrID)
	writeFile(t, filepath.Join(rec.Bundle, "config.json"), "{}")
	writeFile(t, filepath.Join(rec.Rootfs, "bin"), "x")
	writeFile(t, filepath.Join(rec.Dir, "upper", "data"), "x")
	saveContainerRecord(t, s, &rec)
	return &rec
}

func saveSandboxRecord(t *testing.T, s *Service, rec *Sandbox) {
	t.Helper()
	if err := s.saveSandbox(rec); err != nil {
		t.Fatal(err)
	}
}

func saveContainerRecord(t *testing.T, s *Service, rec *Container) {
	t.Helper()
	if err := s.saveContainer(rec); err != nil {
		t.Fatal(err)
	}
}

// writeExit writes the exit file a monitor writes when id exits.
func writeExit(t *testing.T, s *Service, id string, code int32, at time.Time) {
	t.Helper()
	if err := monitor.WriteExitFile(s.exitsDir(), monitor.ExitRecord{ID: id, ExitCode: code, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
}

// editRecord sets one field of a record file, keeping the rest.
func editRecord(t *testing.T, path, key string, v any) {
	t.Helper()
	var m map[string]any
	if err := store.LoadJSON(path, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = v
	if err := store.SaveJSON(path, m); err != nil {
		t.Fatal(err)
	}
}

func checkGone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

func checkSandboxGone(t *testing.T, s *Service) {
	t.Helper()
	if len(s.Sandboxes()) != 0 {
		t.Errorf("sandboxes listed: %+v", s.Sandboxes())
	}
	checkGone(t, filepath.Dir(s.sandboxRecordPath(podID)), s.podDir(podID), filepath.Join(s.bundlesDir(), podID),
		monitor.ExitFilePath(s.exitsDir(), podID))
}

func checkContainerGone(t *testing.T, s *Service, _ *fakeWorld) {
	t.Helper()
	if len(s.Containers()) != 0 {
		t.Errorf("containers listed: %+v", s.Containers())
	}
	checkGone(t, filepath.Join(s.containersDir(), ctrID), filepath.Join(s.bundlesDir(), ctrID),
		monitor.ExitFilePath(s.exitsDir(), ctrID))
}

func checkOrphanGone(t *testing.T, s *Service, _ *fakeWorld) {
	t.Helper()
	checkGone(t, filepath.Join(s.containersDir(), orphanID), filepath.Join(s.bundlesDir(), orphanID), s.podDir(orphanID))
}

// checkSandboxState checks podID's state in memory and on disk.
func checkSandboxState(t *testing.T, s *Service, want SandboxState) Sandbox {
	t.Helper()
	sb, err := s.Sandbox(podID)
	var onDisk Sandbox
	if rerr := readSandboxRecord(s.sandboxRecordPath(podID), podID, &onDisk); err != nil || rerr != nil ||
		sb.State != want || onDisk.State != want {
		t.Errorf("sandbox %s (%v), on disk %s (%v); want %s", sb.State, err, onDisk.State, rerr, want)
	}
	return sb
}

// checkContainerState checks ctrID's state in memory and on disk.
func checkContainerState(t *testing.T, s *Service, want ContainerState) Container {
	t.Helper()
	c, err := s.Container(ctrID)
	var onDisk Container
	if rerr := readContainerRecord(s.containerRecordPath(ctrID), ctrID, &onDisk); err != nil || rerr != nil ||
		c.State != want || onDisk.State != want || onDisk.ExitCode != c.ExitCode {
		t.Errorf("container %s (%v), on disk %s (%v); want %s", c.State, err, onDisk.State, rerr, want)
	}
	return c
}
