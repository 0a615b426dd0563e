// Command berth-pause is PID 1 of a pod's shared PID namespace: it reaps
// every zombie reparented to it and exits 0 on SIGINT or SIGTERM; otherwise
// it sleeps. Build it static (CGO_ENABLED=0).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.0.0-dev"

func main() {
	showVersion := flag.Bool("v", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Printf("berth-pause %s\n", version)
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGCHLD)
	reapZombies()
	for sig := range sigs {
		if sig == unix.SIGCHLD {
			reapZombies()
			continue
		}
		os.Exit(0)
	}
}

// reapZombies collects every exited child without blocking.
func reapZombies() {
	for {
		var status unix.WaitStatus
		pid, err := unix.Wait4(-1, &status, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
