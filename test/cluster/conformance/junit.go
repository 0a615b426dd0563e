package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// junitSuites is the part of ginkgo's JUnit report (e2e.test's
// <report-dir>/junit_01.xml) that Results reads.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Failure *struct {
		Type string `xml:"type,attr"`
		Text string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Type string `xml:"type,attr"`
		Text string `xml:",chardata"`
	} `xml:"error"`
}

// Report is what a JUnit report says about the focused specs, and the
// suite-level nodes (BeforeSuite, AfterSuite, reports) that failed.
type Report struct {
	Results      []Result
	SuiteFailure []string
}

// ParseJUnit reads a JUnit report and keeps the specs focus matches
// (e2e.test lists every spec, the filtered-out ones as skipped). A focused
// spec skipped by --ginkgo.skip takes its reason from skips; one that
// skipped itself keeps its own message.
func ParseJUnit(r io.Reader, focus *regexp.Regexp, skips []Skip) (Report, error) {
	var suites junitSuites
	if err := xml.NewDecoder(r).Decode(&suites); err != nil {
		return Report{}, fmt.Errorf("junit report: %w", err)
	}
	var rep Report
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			spec, isSpec := strings.CutPrefix(c.Name, "[It] ")
			if !isSpec {
				if c.Failure != nil || c.Error != nil {
					rep.SuiteFailure = append(rep.SuiteFailure, c.Name+": "+firstLine(caseText(c)))
				}
				continue
			}
			if !focus.MatchString(spec) {
				continue
			}
			rep.Results = append(rep.Results, caseResult(spec, c, skips))
		}
	}
	return rep, nil
}

func caseResult(spec string, c junitCase, skips []Skip) Result {
	switch {
	case c.Status == Passed:
		return Result{Spec: spec, Status: Passed}
	case c.Status == Skipped || c.Skipped != nil:
		if s, ok := skipFor(skips, spec); ok {
			return Result{Spec: spec, Status: Skipped, Reason: "skip.txt: " + s.Reason}
		}
		msg := "skipped"
		if c.Skipped != nil && c.Skipped.Message != "" {
			msg = c.Skipped.Message
		}
		return Result{Spec: spec, Status: Skipped, Reason: "e2e.test: " + oneLine(msg)}
	default:
		return Result{Spec: spec, Status: Failed, Reason: c.Status + ": " + caseText(c)}
	}
}

func caseText(c junitCase) string {
	switch {
	case c.Failure != nil:
		return strings.TrimSpace(c.Failure.Text)
	case c.Error != nil:
		return strings.TrimSpace(c.Error.Text)
	}
	return c.Status
}
