package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/crilog"
)

// FallbackToLogsOnError reads the log's tail, and never through a
// symlink planted at the log's path by a container that can write it:
// the link's target (a CRI-format file elsewhere) stays out of the status.
func TestTerminationMessageFallbackFollowsNoSymlink(t *testing.T) {
	dir := t.TempDir()
	deps := &syncDeps{rootDir: filepath.Join(dir, "root"), podLogDir: filepath.Join(dir, "logs")}
	meta := podspec.ContainerMeta{PodRef: podspec.PodRef{Namespace: "default", Name: "p"}, Name: "app",
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError}
	logDir := podspec.PodLogDirectory(deps.podLogDir, "default", "p", "uid-1")
	write := func(path, line string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, crilog.AppendRecord(nil, time.Now(), crilog.Stdout, false, []byte(line)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logDir, "app", "0.log"), "it failed")
	if got := deps.terminationMessage("uid-1", meta, 1, "app/0.log"); got != "it failed\n" {
		t.Fatalf("fallback message %q, want the log's tail", got)
	}
	elsewhere := filepath.Join(t.TempDir(), "other.log")
	write(elsewhere, "host secret")
	if err := os.Symlink(elsewhere, filepath.Join(logDir, "app", "1.log")); err != nil {
		t.Fatal(err)
	}
	if got := deps.terminationMessage("uid-1", meta, 1, "app/1.log"); got != "" {
		t.Errorf("fallback through a planted symlink: %q, want nothing", got)
	}
}
