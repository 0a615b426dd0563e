package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/berth-dev/berth/internal/store"
)

// pidFileName is berth serve's pid file in the state directory.
const pidFileName = "berth.pid"

// writePidFile writes the daemon's pid to <state>/berth.pid, replacing a
// stale one: the state directory's lock, taken before, is the real guard
// against a second daemon; the file only tells tools which process it is.
// Mode 0600: everything under the state directory is root's alone
// (TestHostUserReachesNothingOfARunningPod checks it), and who reads the
// pid file — systemd, an administrator — is root.
// Written atomically, not flushed: a reboot clears the state directory.
// The returned func removes it.
func writePidFile(stateDir string) (func(), error) {
	path := filepath.Join(stateDir, pidFileName)
	if err := store.WriteFileVolatile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return func() { os.Remove(path) }, nil
}
