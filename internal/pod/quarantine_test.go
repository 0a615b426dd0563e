package pod

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/store"
)

func testID(c string) string { return strings.Repeat(c, 64) }

func goodSandboxRecord(id string) Sandbox {
	return Sandbox{ID: id, Name: "web_default_u1_0", State: SandboxNotReady, HostNetwork: true,
		CreatedAt: time.Now(), Config: goodSandboxConfig()}
}

func goodContainerRecord(id, sandboxID string) Container {
	return Container{ID: id, Name: "app_web_default_u1_0", SandboxID: sandboxID, State: ContainerExited,
		FinishedAt: time.Now(), ImageID: "sha256:" + testID("9"),
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}
}

func TestCheckRecords(t *testing.T) {
	sbID, ctrID := testID("a"), testID("b")
	sb := goodSandboxRecord(sbID)
	sb.RawConfig, _ = encodeConfig(sb.Config)
	if err := checkSandbox(sbID, &sb); err != nil {
		t.Fatalf("good sandbox: %v", err)
	}
	for field, mutate := range map[string]func(*Sandbox){
		"field id":         func(r *Sandbox) { r.ID = testID("c") },
		"field state":      func(r *Sandbox) { r.State = "paused" },
		"field name":       func(r *Sandbox) { r.Name = "" },
		"field config":     func(r *Sandbox) { r.RawConfig = []byte(`{"metadata":7}`) },
		"directory name ":  func(r *Sandbox) { r.ID = "short" },
		"field config: re": func(r *Sandbox) { r.RawConfig = nil },
	} {
		rec := sb
		mutate(&rec)
		dir := sbID
		if rec.ID == "short" {
			dir = "short"
		}
		if err := checkSandbox(dir, &rec); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("sandbox with bad %s: %v", field, err)
		}
	}
	ctr := goodContainerRecord(ctrID, sbID)
	ctr.RawConfig, _ = encodeConfig(ctr.Config)
	if err := checkContainer(ctrID, &ctr); err != nil {
		t.Fatalf("good container: %v", err)
	}
	for field, mutate := range map[string]func(*Container){
		"field sandboxId": func(r *Container) { r.SandboxID = "../../etc" },
		"field state":     func(r *Container) { r.State = "" },
		"field id":        func(r *Container) { r.ID = "" },
	} {
		rec := ctr
		mutate(&rec)
		if err := checkContainer(ctrID, &rec); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("container with bad %s: %v", field, err)
		}
	}
}

type fakeNetwork struct{ teardowns atomic.Int32 }

func (n *fakeNetwork) Setup(context.Context, network.Attachment) (*network.Result, error) {
	return nil, errors.New("not in this test")
}
func (n *fakeNetwork) Teardown(context.Context, network.Attachment) error {
	n.teardowns.Add(1)
	return nil
}

func newServiceOn(t *testing.T, root, state string, net Network) *Service {
	t.Helper()
	s, err := New(Config{RootDir: root, StateDir: state, RuncPath: "/nonexistent/runc", MonitorPath: "/nonexistent/monitor",
		Images: noImages{}, Network: net, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func recoverService(t *testing.T, s *Service) {
	t.Helper()
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryQuarantinesBadRecords writes records recovery cannot use, with
// the side effects that depend on them, and checks that two starts in a row
// touch none of it, and that a repaired record loads again.
func TestRecoveryQuarantinesBadRecords(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	net := &fakeNetwork{}
	s := newServiceOn(t, root, state, net)
	truncated, future, ctrOfTruncated, ctrFuture, ctrBadConfig := testID("a"), testID("d"), testID("1"), testID("2"), testID("3")
	for _, id := range []string{truncated, future} {
		rec := goodSandboxRecord(id)
		if err := s.saveSandbox(&rec); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(s.podDir(id), "hostname"), "web\n")
		writeFile(t, filepath.Join(s.bundlesDir(), id, "config.json"), "{}") // berth-pause
	}
	for id, sb := range map[string]string{ctrOfTruncated: truncated, ctrFuture: testID("e"), ctrBadConfig: future} {
		rec := goodContainerRecord(id, sb)
		rec.State, rec.FinishedAt = ContainerRunning, time.Time{}
		if err := s.saveContainer(&rec); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(s.containersDir(), id, "upper", "data"), "kept")
		writeFile(t, filepath.Join(s.bundlesDir(), id, "rootfs", "bin"), "kept")
		writeFile(t, filepath.Join(s.exitsDir(), id+".json"), `{"id":"`+id+`"}`)
	}
	truncate(t, s.sandboxRecordPath(truncated), 40)
	setVersion(t, s.sandboxRecordPath(future), recordVersion+1)
	setVersion(t, s.containerRecordPath(ctrFuture), recordVersion+1)
	corruptConfig(t, s.containerRecordPath(ctrBadConfig))
	before := treeOf(t, root, state)

	recoverService(t, s)
	want := map[string]string{
		"sandbox/" + truncated:        "corrupt",
		"sandbox/" + future:           "newer",
		"container/" + ctrOfTruncated: "pod sandbox " + truncated + " is quarantined",
		"container/" + ctrFuture:      "newer",
		"container/" + ctrBadConfig:   "field config",
	}
	checkQuarantined(t, s, want, "")
	if len(s.Sandboxes()) != 0 || len(s.Containers()) != 0 || net.teardowns.Load() != 0 {
		t.Fatalf("quarantined records acted on: %d sandboxes, %d containers, %d CNI DEL",
			len(s.Sandboxes()), len(s.Containers()), net.teardowns.Load())
	}
	checkOnlyRenamed(t, before, treeOf(t, root, state))
	if users := s.ContainersUsingImage("sha256:" + testID("9")); len(users) != 3 {
		t.Errorf("image users %v, want the three quarantined containers", users)
	}

	// The next start finds them as the first left them.
	s2 := newServiceOn(t, root, state, net)
	recoverService(t, s2)
	checkQuarantined(t, s2, want, "quarantined by an earlier start: ")
	checkOnlyRenamed(t, before, treeOf(t, root, state))

	// A person repairs the future-version sandbox: it loads again, and the
	// container that names it holds a stop.
	path := s.sandboxRecordPath(future)
	setVersion(t, path+QuarantineSuffix, recordVersion)
	if err := os.Rename(path+QuarantineSuffix, path); err != nil {
		t.Fatal(err)
	}
	s3 := newServiceOn(t, root, state, net)
	recoverService(t, s3)
	if _, err := s3.Sandbox(future); err != nil {
		t.Fatalf("repaired sandbox not loaded: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), quarantineNote)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("note of a repaired record left: %v", err)
	}
	for _, err := range []error{s3.StopSandbox(context.Background(), future), s3.RemoveSandbox(context.Background(), future)} {
		if !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), ctrBadConfig) {
			t.Errorf("stop/remove of a sandbox a quarantined container names: %v", err)
		}
	}
}

func checkQuarantined(t *testing.T, s *Service, want map[string]string, prefix string) {
	t.Helper()
	got := s.Quarantined()
	if len(got) != len(want) {
		t.Errorf("quarantined %+v, want %d records", got, len(want))
	}
	for _, q := range got {
		w, ok := want[q.Kind+"/"+q.ID]
		if !ok || !strings.Contains(q.Reason, w) {
			t.Errorf("quarantined %s/%s: reason %q, want one with %q", q.Kind, q.ID, q.Reason, w)
		}
		if !strings.Contains(w, "is quarantined") && !strings.HasPrefix(q.Reason, prefix) {
			t.Errorf("quarantined %s/%s: reason %q, want prefix %q", q.Kind, q.ID, q.Reason, prefix)
		}
		if _, err := os.Stat(q.Path); err != nil {
			t.Errorf("quarantined %s/%s: path %s: %v", q.Kind, q.ID, q.Path, err)
		}
	}
}

func truncate(t *testing.T, path string, n int64) {
	t.Helper()
	if err := os.Truncate(path, n); err != nil {
		t.Fatal(err)
	}
}

// setVersion rewrites a record's version, keeping the rest.
func setVersion(t *testing.T, path string, v int) {
	t.Helper()
	var m map[string]any
	if err := store.LoadJSON(path, &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = v
	if err := store.SaveJSON(path, m); err != nil {
		t.Fatal(err)
	}
}

func corruptConfig(t *testing.T, path string) {
	t.Helper()
	var m map[string]any
	if err := store.LoadJSON(path, &m); err != nil {
		t.Fatal(err)
	}
	m["config"] = map[string]any{"metadata": 7}
	if err := store.SaveJSON(path, m); err != nil {
		t.Fatal(err)
	}
}

// treeOf lists every file under the dirs with its content.
func treeOf(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path) //nolint:gosec // G122: the test's own temp dir
			out[path] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkOnlyRenamed checks that every file is still there with its content,
// but for records renamed to .quarantined, and that the only new files are
// those and the notes.
func checkOnlyRenamed(t *testing.T, before, after map[string]string) {
	t.Helper()
	for path, data := range before {
		got, ok := after[path]
		if !ok {
			got, ok = after[path+QuarantineSuffix]
		}
		if !ok || got != data {
			t.Errorf("%s changed or removed", path)
		}
	}
	for path := range after {
		_, was := before[path]
		if _, renamed := before[strings.TrimSuffix(path, QuarantineSuffix)]; !was && !renamed && filepath.Base(path) != quarantineNote {
			t.Errorf("%s appeared", path)
		}
	}
}
