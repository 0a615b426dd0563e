package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommandSerial(t *testing.T) {
	o := Options{E2ETest: "/b/e2e.test", Kubeconfig: "/k", Kubectl: "/b/kubectl", ReportDir: "/r",
		Timeout: 20 * time.Minute, Skips: []Skip{{"[Slow]", "time"}}}
	got := strings.Join(o.Command(), " ")
	want := `/b/e2e.test --ginkgo.focus=\[NodeConformance\] --ginkgo.skip=\[Slow\] --ginkgo.timeout=20m0s ` +
		`--ginkgo.poll-progress-after=5m --ginkgo.no-color --ginkgo.v --kubeconfig=/k --kubectl-path=/b/kubectl ` +
		`--provider=local --report-dir=/r --e2e-output-dir=/r`
	if got != want {
		t.Errorf("command\n%s\nwant\n%s", got, want)
	}
}

func TestCommandParallel(t *testing.T) {
	o := Options{E2ETest: "/b/e2e.test", Ginkgo: "/b/ginkgo", Procs: 4, Kubeconfig: "/k", Kubectl: "kubectl",
		ReportDir: "/r", Timeout: time.Hour}
	got := strings.Join(o.Command(), " ")
	want := `/b/ginkgo --procs=4 --focus=\[NodeConformance\] --skip=^$ --timeout=1h0m0s --poll-progress-after=5m ` +
		`--no-color -v /b/e2e.test -- --kubeconfig=/k --kubectl-path=kubectl --provider=local --report-dir=/r --e2e-output-dir=/r`
	if got != want {
		t.Errorf("command\n%s\nwant\n%s", got, want)
	}
}

// committed reads skip.txt and results.txt.
func committed(t *testing.T) ([]Skip, []Result) {
	t.Helper()
	sf, err := os.Open("skip.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	skips, err := ParseSkips(sf)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := os.Open("results.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	results, err := ParseResults(rf)
	if err != nil {
		t.Fatal(err)
	}
	return skips, results
}

// TestCommittedListsAgree checks that every skip.txt line skips some spec
// of results.txt, and that results.txt gives skip.txt's reason exactly
// for the specs skip.txt matches.
func TestCommittedListsAgree(t *testing.T) {
	skips, results := committed(t)
	used := map[string]bool{}
	for _, r := range results {
		s, listed := skipFor(skips, r.Spec)
		if listed {
			used[s.Spec] = true
		}
		fromSkip := strings.HasPrefix(r.Reason, "skip.txt: ")
		switch {
		case listed && (r.Status != Skipped || r.Reason != "skip.txt: "+s.Reason):
			t.Errorf("%q: skip.txt skips it (%q), results.txt says %s %q", r.Spec, s.Spec, r.Status, r.Reason)
		case !listed && fromSkip:
			t.Errorf("%q: results.txt gives a skip.txt reason, but no skip.txt line matches it", r.Spec)
		}
	}
	for _, s := range skips {
		if !used[s.Spec] {
			t.Errorf("skip.txt %q matches no spec of results.txt", s.Spec)
		}
	}
}

// TestDryRunMatchesResults asks e2e.test (BERTH_E2E_TEST, make e2e-bin)
// which specs it selects and checks results.txt lists exactly those: no
// spec renamed, added or removed since results.txt was written.
func TestDryRunMatchesResults(t *testing.T) {
	e2e := os.Getenv("BERTH_E2E_TEST")
	if e2e == "" {
		t.Skip("BERTH_E2E_TEST is not set (make e2e-bin builds bin/kube-1.37/e2e.test)")
	}
	skips, results := committed(t)
	dry, err := DryRun(Options{E2ETest: e2e, ReportDir: t.TempDir(), Skips: skips})
	if err != nil {
		t.Fatal(err)
	}
	// A dry run reports every selected spec passed: compare selection only.
	var want []Result
	for _, r := range results {
		if r.Status == Skipped && !strings.HasPrefix(r.Reason, "skip.txt: ") {
			r.Status, r.Reason = Passed, ""
		}
		want = append(want, r)
	}
	for _, p := range Compare(want, dry) {
		t.Error(p)
	}
}

// TestUpdateFailsOnFailedSpecs: rewriting results.txt never turns a
// failure into a pass.
func TestUpdateFailsOnFailedSpecs(t *testing.T) {
	t.Setenv("BERTH_CONFORMANCE_UPDATE", "1")
	path := filepath.Join(t.TempDir(), "results.txt")
	problems, err := checkResults(path, []Result{{Spec: "a", Status: Passed}, {Spec: "b", Status: Failed, Reason: "failed: boom\nstack"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], `"b" failed: failed: boom`) {
		t.Errorf("problems = %q, want the failed spec", problems)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("results.txt not written: %v", err)
	}
}

func TestAbsolutePaths(t *testing.T) {
	o, err := Options{E2ETest: "bin/e2e.test", Ginkgo: "/b/ginkgo", Kubectl: "kubectl", ReportDir: "r"}.absolute()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if o.E2ETest != filepath.Join(wd, "bin/e2e.test") || o.ReportDir != filepath.Join(wd, "r") ||
		o.Ginkgo != "/b/ginkgo" || o.Kubectl != "kubectl" || o.Kubeconfig != "" {
		t.Errorf("absolute = %+v", o)
	}
}
