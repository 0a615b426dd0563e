package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// failedTB is a testing.TB that reports failure and runs its cleanups when
// the test says.
type failedTB struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (f *failedTB) Failed() bool        { return f.failed }
func (f *failedTB) Cleanup(fn func())   { f.cleanups = append(f.cleanups, fn) }
func (f *failedTB) Name() string        { return "TestX/sub case" }
func (f *failedTB) Logf(string, ...any) {}
func (f *failedTB) Helper()             {}
func (f *failedTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestKeepOnFailureCopiesLogsOnly(t *testing.T) {
	src := t.TempDir()
	for name, content := range map[string]string{
		"berth.log": "daemon", "pki/ca.key": "secret", "report/junit_01.xml": "<x/>", "etcd/member/wal/0.wal": "w",
	} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, failed := range []bool{false, true} {
		t.Setenv("BERTH_TEST_ARTIFACTS", t.TempDir())
		tb := &failedTB{TB: t, failed: failed}
		KeepOnFailure(tb, src, filepath.Join(src, "berth.log"))
		tb.runCleanups()
		runs, _ := os.ReadDir(ArtifactsDir())
		if !failed {
			if len(runs) != 0 {
				t.Errorf("a passing test kept %d directories", len(runs))
			}
			continue
		}
		if len(runs) != 1 {
			t.Fatalf("a failed test kept %d directories, want 1", len(runs))
		}
		dir := filepath.Join(ArtifactsDir(), runs[0].Name())
		files, _ := os.ReadDir(dir)
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
			if info, _ := f.Info(); info.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", f.Name(), info.Mode().Perm())
			}
		}
		base := filepath.Base(src)
		want := []string{base + "_berth.log", base + "_report_junit_01.xml", "berth.log"}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("kept %v, want %v", names, want)
		}
	}
}

func TestPrintSummaryIsBounded(t *testing.T) {
	summary.lines = nil
	t.Cleanup(func() { summary.lines = nil })
	var b strings.Builder
	printSummary(&b, "pkg")
	if b.Len() != 0 {
		t.Errorf("no failures printed %q", b.String())
	}
	for i := range maxSummaryLines + 5 {
		Summarize("spec %d failed", i)
	}
	printSummary(&b, "pkg")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != maxSummaryLines+2 || lines[1] != "spec 0 failed" || lines[len(lines)-1] != "... and 5 more" {
		t.Errorf("summary:\n%s", b.String())
	}
}
