package network

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// inNetns runs fn with the calling thread in the network namespace at
// netnsPath, then moves the thread back. It must run on a spare locked
// thread (onSpareThread); restored reports that the thread is back in its
// own namespace and may return to Go's pool.
func inNetns(netnsPath string, fn func() error) (_ error, restored bool) {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err, true
	}
	defer own.Close()
	target, err := os.Open(netnsPath)
	if err != nil {
		return err, true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err), true
	}
	err = fn()
	if serr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); serr != nil {
		return fmt.Errorf("setns back to the host: %w", serr), false
	}
	return err, true
}
