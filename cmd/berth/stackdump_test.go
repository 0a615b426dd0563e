package main

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the dumping goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSIGUSR1DumpsStacks(t *testing.T) {
	var out lockedBuffer
	stop := dumpStacksOnSignal(&out)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "=== end of goroutine stack dump ===") {
		if time.Now().After(deadline) {
			t.Fatalf("no stack dump 10s after SIGUSR1; got %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	dump := out.String()
	for _, want := range []string{"=== goroutine stack dump at ", "TestSIGUSR1DumpsStacks", "goroutine "} {
		if !strings.Contains(dump, want) {
			t.Errorf("stack dump lacks %q:\n%s", want, dump)
		}
	}
}
