package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
)

// RuncBinary returns the runc executable to run: the configured absolute
// path, or the configured name beside the running executable, else in
// PATH. The default, berth-runc (the pinned runc make install puts beside
// berth), falls back to the system's runc in PATH where it is not
// installed; a name or path the configuration gives has no fallback.
func (c Config) RuncBinary() (string, error) {
	path, err := resolveBinary("runc", c.RuncPath, true)
	if err != nil && c.RuncPath == DefaultRunc {
		if system, lookErr := exec.LookPath(SystemRunc); lookErr == nil {
			return system, nil
		}
		return "", fmt.Errorf("key %q: neither %s (beside berth or in PATH) nor %s in PATH: %w", "runc", DefaultRunc, SystemRunc, errdefs.ErrFailedPrecondition)
	}
	return path, err
}

// MonitorBinary returns the berth-monitor executable: the configured
// absolute path, or the configured name beside the running executable,
// else in PATH.
func (c Config) MonitorBinary() (string, error) {
	return resolveBinary("monitor", c.MonitorPath, true)
}

// PauseBinary returns the berth-pause executable, resolved like
// MonitorBinary.
func (c Config) PauseBinary() (string, error) {
	return resolveBinary("pause", c.PausePath, true)
}

func resolveBinary(key, value string, besideExecutable bool) (string, error) {
	if strings.ContainsRune(value, '/') {
		if _, err := os.Stat(value); err != nil {
			return "", fmt.Errorf("key %q: executable: %v: %w", key, err, errdefs.ErrFailedPrecondition)
		}
		return value, nil
	}
	if besideExecutable {
		if self, err := os.Executable(); err == nil {
			candidate := filepath.Join(filepath.Dir(self), value)
			if isExecutableFile(candidate) {
				return candidate, nil
			}
		}
	}
	path, err := exec.LookPath(value)
	if err != nil {
		return "", fmt.Errorf("key %q: executable %q: not found in PATH: %w", key, value, errdefs.ErrFailedPrecondition)
	}
	return path, nil
}

func isExecutableFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// RuntimeBinary resolves the runc of runtime handler name, as RuncBinary
// resolves a configured one (no fallback).
func (c Config) RuntimeBinary(name string) (string, error) {
	return resolveBinary("runtimes."+name+".runc", c.Runtimes[name].Runc, true)
}
