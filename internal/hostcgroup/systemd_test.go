package hostcgroup

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSystemdRunning(t *testing.T) {
	dir := t.TempDir()
	err := systemdRunning(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "system")) {
		t.Fatalf("no marker: err = %v, want it named", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "system"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = systemdRunning(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "private")) {
		t.Fatalf("no socket: err = %v, want it named", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "private"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := systemdRunning(dir); err != nil {
		t.Fatalf("marker and listening socket: err = %v", err)
	}
}
