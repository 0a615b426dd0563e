package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestResolveBinaryFromPATH(t *testing.T) {
	dir := t.TempDir()
	name := "berth-test-tool-" + filepath.Base(dir)
	exe := filepath.Join(dir, name)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	c := Default()
	c.RuncPath = name
	c.MonitorPath = name
	for _, resolve := range []func() (string, error){c.RuncBinary, c.MonitorBinary} {
		got, err := resolve()
		if err != nil || got != exe {
			t.Errorf("resolved %q, %v; want %s", got, err, exe)
		}
	}
}

func TestResolveBinaryMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c := Default()
	c.PausePath = "berth-test-absent-tool"
	if _, err := c.PauseBinary(); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("missing bare name: err = %v, want FailedPrecondition", err)
	}
	c.RuncPath = filepath.Join(t.TempDir(), "runc")
	if _, err := c.RuncBinary(); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("missing absolute path: err = %v, want FailedPrecondition", err)
	}
}

func TestResolveBinaryAbsolute(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "runc")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.RuncPath = exe
	if got, err := c.RuncBinary(); err != nil || got != exe {
		t.Errorf("RuncBinary = %q, %v; want %s", got, err, exe)
	}
}

func TestResolveBinaryBesideExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip("no executable path:", err)
	}
	// The test binary itself is an executable file beside itself.
	t.Setenv("PATH", t.TempDir())
	c := Default()
	c.MonitorPath = filepath.Base(self)
	got, err := c.MonitorBinary()
	if err != nil || got != self {
		t.Errorf("MonitorBinary = %q, %v; want %s", got, err, self)
	}
}

// writeTool writes an executable script named name into dir.
func writeTool(t *testing.T, dir, name string) string {
	t.Helper()
	exe := filepath.Join(dir, name)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestRuncBinaryPrefersThePinnedRunc(t *testing.T) {
	dir := t.TempDir()
	pinned, _ := writeTool(t, dir, DefaultRunc), writeTool(t, dir, SystemRunc)
	t.Setenv("PATH", dir)
	if got, err := Default().RuncBinary(); err != nil || got != pinned {
		t.Errorf("RuncBinary = %q, %v; want the pinned %s", got, err, pinned)
	}
}

func TestRuncBinaryFallsBackToTheSystemRunc(t *testing.T) {
	dir := t.TempDir()
	system := writeTool(t, dir, SystemRunc)
	t.Setenv("PATH", dir)
	if got, err := Default().RuncBinary(); err != nil || got != system {
		t.Errorf("RuncBinary without berth-runc = %q, %v; want the system's %s", got, err, system)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Default().RuncBinary(); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("no runc at all: err = %v, want FailedPrecondition", err)
	}
}

func TestRuncBinaryGivenHasNoFallback(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, SystemRunc)
	t.Setenv("PATH", dir)
	c := Default()
	c.RuncPath = "berth-test-absent-runc"
	if got, err := c.RuncBinary(); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("a configured runc that is missing: %q, %v; want FailedPrecondition, not the system's", got, err)
	}
}
