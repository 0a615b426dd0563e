package conformance

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Focus selects the node conformance specs of e2e.test.
const Focus = `\[NodeConformance\]`

// SlowFocus selects the node conformance specs tagged [Slow], which the CI
// run skips for time (`make test-conformance-slow` runs them).
const SlowFocus = `\[NodeConformance\].*\[Slow\]|\[Slow\].*\[NodeConformance\]`

// WithoutSkip returns skips without the entry for spec.
func WithoutSkip(skips []Skip, spec string) []Skip {
	var out []Skip
	for _, s := range skips {
		if s.Spec != spec {
			out = append(out, s)
		}
	}
	return out
}

// Skip is one line of skip.txt: specs whose full name contains Spec are
// not run, for Reason.
type Skip struct{ Spec, Reason string }

// ParseSkips reads skip.txt: "spec text | reason" per line, where the spec
// text is a substring of the specs' full names (a tag such as "[Slow]"
// skips every spec carrying it); blank lines and # comments are ignored.
func ParseSkips(r io.Reader) ([]Skip, error) {
	var out []Skip
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		spec, reason, ok := strings.Cut(line, "|")
		spec, reason = strings.TrimSpace(spec), strings.TrimSpace(reason)
		if !ok || spec == "" || reason == "" {
			return nil, fmt.Errorf("skip.txt line %d: %q is not \"spec | reason\"", n, line)
		}
		out = append(out, Skip{spec, reason})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("skip.txt: %w", err)
	}
	return out, nil
}

// SkipRegexp is the --ginkgo.skip value that skips exactly the listed
// spec texts.
func SkipRegexp(skips []Skip) string {
	if len(skips) == 0 {
		return "^$"
	}
	quoted := make([]string, len(skips))
	for i, s := range skips {
		quoted[i] = regexp.QuoteMeta(s.Spec)
	}
	return strings.Join(quoted, "|")
}

// skipFor returns the skip.txt entry that matches spec, if any.
func skipFor(skips []Skip, spec string) (Skip, bool) {
	for _, s := range skips {
		if strings.Contains(spec, s.Spec) {
			return s, true
		}
	}
	return Skip{}, false
}

// Status of a spec in results.txt.
const (
	Passed  = "passed"
	Skipped = "skipped"
	Failed  = "failed"
)

// Result is one spec's outcome: its full name (as e2e.test prints it,
// without the "[It] " prefix), its status and, for a skipped or failed
// spec, why.
type Result struct {
	Spec, Status, Reason string
}

// ParseResults reads results.txt: "status | spec" or "skipped | spec |
// reason" per line, # comments ignored.
func ParseResults(r io.Reader) ([]Result, error) {
	var out []Result
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " | ", 3)
		res := Result{Status: strings.TrimSpace(parts[0])}
		if len(parts) > 1 {
			res.Spec = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 {
			res.Reason = strings.TrimSpace(parts[2])
		}
		switch {
		case res.Spec == "":
			return nil, fmt.Errorf("results.txt line %d: no spec", n)
		case res.Status != Passed && res.Status != Skipped:
			return nil, fmt.Errorf("results.txt line %d: status %q is neither %s nor %s", n, res.Status, Passed, Skipped)
		case res.Status == Skipped && res.Reason == "":
			return nil, fmt.Errorf("results.txt line %d: skipped spec without a reason", n)
		case seen[res.Spec]:
			return nil, fmt.Errorf("results.txt line %d: spec listed twice", n)
		}
		seen[res.Spec] = true
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results.txt: %w", err)
	}
	return out, nil
}

// WriteResults writes results in results.txt's format, sorted by spec,
// after header (each of its lines is written as a # comment).
func WriteResults(w io.Writer, header string, results []Result) error {
	sorted := append([]Result(nil), results...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Spec < sorted[j].Spec })
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	counts := map[string]int{}
	for _, r := range sorted {
		counts[r.Status]++
	}
	fmt.Fprintf(&b, "# %d specs: %d passed, %d skipped\n", len(sorted), counts[Passed], counts[Skipped])
	for _, r := range sorted {
		if r.Status == Skipped {
			fmt.Fprintf(&b, "%s | %s | %s\n", r.Status, r.Spec, oneLine(r.Reason))
		} else {
			fmt.Fprintf(&b, "%s | %s\n", r.Status, r.Spec)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Compare lists every difference between the committed results and a
// run's: a listed spec that did not end as listed (a failure, or a skip
// that now passes), a spec the run reports that the list lacks, and a
// listed spec the run did not report.
func Compare(want, got []Result) []string {
	gotBy := map[string]Result{}
	for _, r := range got {
		gotBy[r.Spec] = r
	}
	var problems []string
	wantBy := map[string]bool{}
	for _, w := range want {
		wantBy[w.Spec] = true
		g, ok := gotBy[w.Spec]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%q: listed as %s, not reported by e2e.test (renamed or removed?)", w.Spec, w.Status))
		case g.Status != w.Status:
			problems = append(problems, fmt.Sprintf("%q: listed as %s, %s%s", w.Spec, w.Status, g.Status, because(g.Reason)))
		}
	}
	for _, g := range got {
		if !wantBy[g.Spec] {
			problems = append(problems, fmt.Sprintf("%q: %s%s, not listed in results.txt", g.Spec, g.Status, because(g.Reason)))
		}
	}
	return problems
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + firstLine(reason)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// oneLine keeps a reason on its line of results.txt.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
