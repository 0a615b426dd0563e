package userns

import (
	"os"
	"strings"
	"testing"
)

func TestCanIDMap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	holder := []string{"/bin/sleep", "60"}
	if err := CanIDMap(t.TempDir(), holder); err != nil {
		t.Errorf("a directory on the test's filesystem: %v", err)
	}
	if err := CanIDMap("/proc", holder); err == nil || !strings.Contains(err.Error(), "cannot be idmapped") {
		t.Errorf("procfs: %v, want it refused", err)
	}
}
