package network

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"
)

// WaitForPlugins waits until no CNI plugin process is still working on the
// pod: after the daemon is killed mid-Setup, the plugins it started run on
// and finish their ADD. Recovery must not tear the pod down before they do,
// or their late ADD would leave an address and rules behind. It returns
// when none is left or ctx ends.
func WaitForPlugins(ctx context.Context, podID string) {
	needle := []byte("CNI_CONTAINERID=" + podID + "\x00")
	for pluginsRunning(needle) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pluginsRunning reports whether any process's environment holds needle.
func pluginsRunning(needle []byte) bool {
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, path := range envs {
		env, err := os.ReadFile(path)
		if err == nil && bytes.Contains(append(env, 0), needle) {
			return true
		}
	}
	return false
}
