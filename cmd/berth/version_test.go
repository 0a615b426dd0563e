package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionNamesTheRunc: berth version names the runc berth serve would
// run, by the same resolution: a given one, with its version and path.
func TestVersionNamesTheRunc(t *testing.T) {
	c := newCLI(t)
	fake := filepath.Join(t.TempDir(), "runc")
	script := "#!/bin/sh\necho 'runc version 9.8.7'\necho 'commit: test'\necho 'spec: 1.3.0'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := c.must("version", "--runc", fake)
	want := "runc 9.8.7 (spec 1.3.0) at " + fake + ", not the pinned berth-runc"
	if !strings.HasPrefix(out, "berth ") || !strings.Contains(out, want) {
		t.Errorf("berth version:\n%s\nwant a line %q", out, want)
	}
	out = c.must("version", "--runc", filepath.Join(t.TempDir(), "absent"))
	if !strings.Contains(out, "runc: none (") {
		t.Errorf("berth version with a missing runc:\n%s\nwant 'runc: none (...)'", out)
	}
}
