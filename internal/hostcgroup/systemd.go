package hostcgroup

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SystemdRunDir is where a running systemd keeps its runtime state.
const SystemdRunDir = "/run/systemd"

// SystemdRunning reports (nil) whether systemd is this host's service
// manager and answers: <SystemdRunDir>/system is a directory (what
// sd_booted checks) and its private socket accepts a connection (what
// runc's systemd driver dials, as root, before the system bus). The error
// says which of the two is missing.
func SystemdRunning() error { return systemdRunning(SystemdRunDir) }

func systemdRunning(runDir string) error {
	marker := filepath.Join(runDir, "system")
	if st, err := os.Stat(marker); err != nil || !st.IsDir() {
		return fmt.Errorf("systemd is not the service manager here: no directory %s", marker)
	}
	socket := filepath.Join(runDir, "private")
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return fmt.Errorf("systemd does not answer on %s: %w", socket, err)
	}
	conn.Close()
	return nil
}
