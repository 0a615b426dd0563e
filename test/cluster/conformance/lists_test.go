package conformance

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParseSkips(t *testing.T) {
	skips, err := ParseSkips(strings.NewReader("# comment\n\n[Slow] | CI time\nPrivilegedPod should x | no dummy | driver\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Skip{{"[Slow]", "CI time"}, {"PrivilegedPod should x", "no dummy | driver"}}
	if !reflect.DeepEqual(skips, want) {
		t.Errorf("skips = %+v, want %+v", skips, want)
	}
	for _, bad := range []string{"no reason\n", "spec |\n", "| reason\n"} {
		if _, err := ParseSkips(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestSkipRegexpMatchesExactlyTheListed(t *testing.T) {
	re := regexp.MustCompile(SkipRegexp([]Skip{{"[Slow]", "x"}, {"should (a) b.c", "y"}}))
	for spec, want := range map[string]bool{
		"[sig-node] Pods should cap back-off [Slow] [NodeConformance]": true,
		"[sig-node] Pods should (a) b.c [NodeConformance]":             true,
		"[sig-node] Pods should a bxc [NodeConformance]":               false,
		"[sig-node] Pods Slow [NodeConformance]":                       false,
	} {
		if got := re.MatchString(spec); got != want {
			t.Errorf("skip matches %q = %v, want %v", spec, got, want)
		}
	}
	if re := regexp.MustCompile(SkipRegexp(nil)); re.MatchString("[sig-node] anything") {
		t.Error("an empty skip list skips specs")
	}
}

func TestResultsRoundTrip(t *testing.T) {
	results := []Result{
		{Spec: "b spec [NodeConformance]", Status: Skipped, Reason: "skip.txt: two\nlines"},
		{Spec: "a spec [NodeConformance]", Status: Passed},
	}
	var b bytes.Buffer
	if err := WriteResults(&b, "header line\nsecond", results); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# header line\n# second\n# 2 specs: 1 passed, 1 skipped\npassed | a spec") {
		t.Errorf("results.txt =\n%s", b.String())
	}
	got, err := ParseResults(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{results[1], {Spec: results[0].Spec, Status: Skipped, Reason: "skip.txt: two lines"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}

func TestParseResultsRejects(t *testing.T) {
	for name, text := range map[string]string{
		"failed status":   "failed | a\n",
		"no spec":         "passed\n",
		"skip, no reason": "skipped | a\n",
		"listed twice":    "passed | a\nskipped | a | why\n",
		"unknown status":  "ok | a\n",
	} {
		if _, err := ParseResults(strings.NewReader(text)); err == nil {
			t.Errorf("%s: %q parsed without error", name, text)
		}
	}
}

func TestCompare(t *testing.T) {
	want := []Result{
		{Spec: "passes", Status: Passed},
		{Spec: "fails now", Status: Passed},
		{Spec: "skipped, passes now", Status: Skipped, Reason: "e2e.test: x"},
		{Spec: "gone", Status: Passed},
		{Spec: "still skipped", Status: Skipped, Reason: "skip.txt: y"},
	}
	got := []Result{
		{Spec: "passes", Status: Passed},
		{Spec: "fails now", Status: Failed, Reason: "failed: [FAILED] timed out\nstack"},
		{Spec: "skipped, passes now", Status: Passed},
		{Spec: "new", Status: Passed},
		{Spec: "still skipped", Status: Skipped, Reason: "skip.txt: other words"},
	}
	problems := Compare(want, got)
	wantProblems := []string{
		`"fails now": listed as passed, failed: failed: [FAILED] timed out`,
		`"skipped, passes now": listed as skipped, passed`,
		`"gone": listed as passed, not reported by e2e.test (renamed or removed?)`,
		`"new": passed, not listed in results.txt`,
	}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Errorf("problems =\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(wantProblems, "\n"))
	}
	if p := Compare(want[:1], got[:1]); len(p) != 0 {
		t.Errorf("equal results differ: %q", p)
	}
}

func TestWithoutSkip(t *testing.T) {
	skips := []Skip{{Spec: "[Slow]", Reason: "time"}, {Spec: "PrivilegedPod", Reason: "kernel"}}
	got := WithoutSkip(skips, "[Slow]")
	if len(got) != 1 || got[0].Spec != "PrivilegedPod" {
		t.Errorf("WithoutSkip = %v, want only PrivilegedPod", got)
	}
	if SkipRegexp(got) == SkipRegexp(skips) {
		t.Errorf("the skip regexp did not change: %s", SkipRegexp(got))
	}
}
