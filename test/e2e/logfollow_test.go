package e2e

import (
	"bytes"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logsFollower is a `berth logs -f` the test started: what it printed,
// its errors, and whether it has ended.
type logsFollower struct {
	t      *testing.T
	out    lockedBuffer
	errOut lockedBuffer
	done   chan struct{}
	err    error // once done is closed
	pid    int
}

// stacks makes it print its goroutines and exit (SIGQUIT), and returns
// its errors with them.
func (f *logsFollower) stacks() string {
	_ = syscall.Kill(f.pid, syscall.SIGQUIT) // the test's own child
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
	}
	return f.errOut.tail(16 << 10)
}

// followLogs starts `berth logs -f pod`; it is killed at the test's end.
func (n *node) followLogs(pod string) *logsFollower {
	n.t.Helper()
	f := &logsFollower{t: n.t, done: make(chan struct{})}
	cmd := n.berthCmd("logs", "-f", "--log-level=debug", pod) // its moves across rotations, for a failure
	cmd.Stdout, cmd.Stderr = &f.out, &f.errOut
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	f.pid = cmd.Process.Pid
	go func() { f.err = cmd.Wait(); close(f.done) }()
	n.t.Cleanup(func() { _ = cmd.Process.Kill(); <-f.done })
	return f
}

// Errors is what it printed on stderr, its last 16 KiB.
func (f *logsFollower) Errors() string { return f.errOut.tail(16 << 10) }

// String is what it printed so far.
func (f *logsFollower) String() string { return f.out.String() }

// waitLast waits until its output ends with last, and fails saying why
// not: it ended (with its error), or the deadline passed.
func (f *logsFollower) waitLast(last string, deadline time.Time) {
	f.t.Helper()
	for !f.out.endsWith(last) {
		select {
		case <-f.done:
			if !f.out.endsWith(last) {
				f.t.Fatalf("berth logs -f ended (%v) before printing %q; its last output %q; its errors %q", f.err, last, f.out.tail(300), f.errOut.String())
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			f.t.Logf("berth logs -f's goroutines:\n%s", f.stacks())
			f.t.Fatalf("berth logs -f did not print %q in time; its last output %q", last, f.out.tail(300))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// endsWith reports whether the output ends with s; it holds the writer
// for no longer than the comparison of s (the output is large).
func (b *lockedBuffer) endsWith(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.HasSuffix(b.buf.Bytes(), []byte(s))
}

// tail is the last n bytes written at most.
func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	data := b.buf.Bytes()
	return string(data[max(len(data)-n, 0):])
}
