package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// dumpStacksOnSignal writes every goroutine's stack to w each time the
// daemon gets SIGUSR1, as containerd and CRI-O do, so that a daemon that
// seems stuck — in shutdown too — can be looked into without stopping it.
// The returned func ends it.
func dumpStacksOnSignal(w io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sigs:
				writeStacks(w)
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// writeStacks writes all goroutines' stacks between two marker lines.
func writeStacks(w io.Writer) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	at := time.Now().Format(time.RFC3339Nano)
	fmt.Fprintf(w, "=== goroutine stack dump at %s (SIGUSR1) ===\n%s\n=== end of goroutine stack dump ===\n", at, buf)
}
