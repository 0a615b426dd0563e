package conformance

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParseJUnit(t *testing.T) {
	f, err := os.Open("testdata/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	skips := []Skip{{"PrivilegedPod should enable privileged commands", "no dummy link driver"}}
	rep, err := ParseJUnit(f, regexp.MustCompile(Focus), skips)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Spec: "[sig-node] Pods should get a host IP [Conformance] [NodeConformance]", Status: Passed},
		{Spec: "[sig-node] Sysctls [LinuxOnly] should support sysctls [Environment:NotInUserNS] [Conformance] [NodeConformance]",
			Status: Skipped, Reason: "e2e.test: skipped - Only supported for node OS distro [gci ubuntu] (not custom)"},
		{Spec: "[sig-node] PrivilegedPod should enable privileged commands [LinuxOnly] [NodeConformance]",
			Status: Skipped, Reason: "skip.txt: no dummy link driver"},
	}
	if len(rep.Results) != 4 {
		t.Fatalf("results = %d, want 4 (the unfocused Deployment spec and suite nodes left out): %+v", len(rep.Results), rep.Results)
	}
	if !reflect.DeepEqual(rep.Results[:3], want) {
		t.Errorf("results = %+v\nwant %+v", rep.Results[:3], want)
	}
	failed := rep.Results[3]
	if failed.Status != Failed || !strings.Contains(failed.Reason, "pod never restarted") {
		t.Errorf("failed spec = %+v", failed)
	}
	if len(rep.SuiteFailure) != 1 || rep.SuiteFailure[0] != "[ReportAfterSuite] Kubernetes e2e suite report: [FAILED] could not write report" {
		t.Errorf("suite failures = %q", rep.SuiteFailure)
	}
}

func TestParseJUnitRejectsGarbage(t *testing.T) {
	if _, err := ParseJUnit(strings.NewReader("<testsuites><testsuite>"), regexp.MustCompile(Focus), nil); err == nil {
		t.Error("truncated report parsed without error")
	}
}
