// Command berth-monitor is the per-pod monitor that berth serve launches:
// it creates and starts the pod's containers with runc, holds their stdio,
// writes their CRI logs and exit files. See internal/monitord.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/monitord"
)

// readyFD is the pipe the launcher passes to learn when the socket listens.
const readyFD = 3

func main() {
	var cfg monitord.Config
	var logPath string
	flag.StringVar(&cfg.Pod, "pod", "", "pod id")
	flag.StringVar(&cfg.Socket, "socket", "", "unix socket to listen on")
	flag.StringVar(&cfg.ExitDir, "exit-dir", "", "directory of exit files")
	flag.StringVar(&cfg.RuncPath, "runc", "runc", "runc binary")
	flag.StringVar(&cfg.RuncRoot, "runc-root", "", "runc --root")
	flag.StringVar(&logPath, "log", "", "file for the monitor's own diagnostics")
	flag.Parse()

	// One monitor runs per pod: keep its footprint small. The launcher
	// sets GOMAXPROCS=1 in the environment (monitor.MonitorEnvGOMAXPROCS),
	// which the runtime read at its start; runc must not inherit it.
	runtime.GOMAXPROCS(1)
	_ = os.Unsetenv("GOMAXPROCS") // cannot fail for a valid name
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(32 << 20)

	cfg.Log = openLog(logPath)
	if err := monitord.Run(cfg, readyPipe()); err != nil {
		cfg.Log.Print(err)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// openLog opens the diagnostics file and makes it stderr too, so a Go
// runtime crash is recorded there.
func openLog(path string) *log.Logger {
	if path == "" {
		return log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth-monitor: log %s: %v\n", path, err)
		os.Exit(1)
	}
	_ = unix.Dup2(int(f.Fd()), 2) // best effort: diagnostics only
	return log.New(f, "", log.LstdFlags|log.Lmicroseconds)
}

// readyPipe returns fd 3 when the launcher passed a pipe there.
func readyPipe() *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(readyFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	unix.CloseOnExec(readyFD)
	return os.NewFile(readyFD, "ready")
}
