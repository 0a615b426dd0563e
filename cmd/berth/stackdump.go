package main

import (
	"context"
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
// seems stuck can be looked into without stopping it. It returns when ctx
// ends.
func dumpStacksOnSignal(ctx context.Context, w io.Writer) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
				writeStacks(w)
			}
		}
	}()
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
