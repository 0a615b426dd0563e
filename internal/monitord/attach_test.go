package monitord

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/crilog"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakeContainer is a container record whose "process" is the test: it
// holds runc's ends of the stdio pipes.
type fakeContainer struct {
	c       *container
	stdinR  *os.File
	out     *os.File
	errOut  *os.File
	logPath string
}

// serveFake starts a monitor server (no runc) holding one fake container.
func serveFake(t *testing.T, stdinOnce bool) (*monitor.Client, *fakeContainer) {
	t.Helper()
	dir, err := os.MkdirTemp("", "bmon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := newServer(Config{Pod: "p", Socket: filepath.Join(dir, "m.sock"), ExitDir: dir})
	l, err := listen(s.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go s.acceptLoop(l)

	streams, err := newFIFOs(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeContainer{stdinR: streams.runcIn, out: streams.runcOut, errOut: streams.runcErr,
		logPath: filepath.Join(dir, "c.log")}
	logw, err := crilog.Open(dir, "c.log")
	if err != nil {
		t.Fatal(err)
	}
	f.c = &container{id: "c1", log: logw, stdio: streams, fan: newFanout(), stdin: true, stdinOnce: stdinOnce}
	f.c.copied = f.c.copyOutput()
	t.Cleanup(func() {
		f.exit()
		<-f.c.copied
		streams.closeMonitorSide()
		f.stdinR.Close()
		logw.Close()
	})
	s.containers["c1"] = f.c
	return monitor.NewClient(s.cfg.Socket), f
}

// exit closes the container's output, as its processes ending would.
func (f *fakeContainer) exit() {
	f.out.Close()
	f.errOut.Close()
}

func (f *fakeContainer) waitSubscribers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.c.fan.mu.Lock()
		got := len(f.c.fan.subs)
		f.c.fan.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attached clients, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type attachResult struct {
	stdout, stderr *syncBuffer
	done           chan error
}

func attach(client *monitor.Client, stdin io.Reader) attachResult {
	r := attachResult{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	req := monitor.AttachRequest{Stdin: stdin != nil, Stdout: true, Stderr: true}
	go func() {
		r.done <- client.Attach(context.Background(), "c1", req,
			monitor.AttachStreams{Stdin: stdin, Stdout: r.stdout, Stderr: r.stderr})
	}()
	return r
}

func TestAttachFansOutOutputAndForwardsStdin(t *testing.T) {
	client, f := serveFake(t, false)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	first, second := attach(client, stdinR), attach(client, nil)
	f.waitSubscribers(t, 2)

	if _, err := io.WriteString(f.out, "to stdout\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f.errOut, "to stderr\n"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []attachResult{first, second} {
		waitFor(t, "output at each client", func() bool {
			return r.stdout.String() == "to stdout\n" && r.stderr.String() == "to stderr\n"
		})
	}
	if _, err := io.WriteString(stdinW, "typed\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(f.stdinR, got); err != nil || string(got) != "typed\n" {
		t.Fatalf("container stdin read %q, %v", got, err)
	}

	f.exit()
	for _, r := range []attachResult{first, second} {
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("attach ended with %v, want nil once the output ended", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("attach still open after the container's output ended")
		}
	}
	data, _ := os.ReadFile(f.logPath)
	records, err := crilog.ReadRecords(bytes.NewReader(data))
	if err != nil || len(records) != 2 {
		t.Fatalf("log holds %d records (%v), want both lines", len(records), err)
	}
	if _, err := client.List(context.Background()); err != nil {
		t.Fatalf("monitor answers after attach sessions: %v", err)
	}
}

func TestStdinOnceClosesContainerStdinWhenClientDetaches(t *testing.T) {
	client, f := serveFake(t, true)
	r := attach(client, strings.NewReader("last words\n"))
	got, err := io.ReadAll(f.stdinR) // ends only when the monitor closes the stdin pipe
	if err != nil || string(got) != "last words\n" {
		t.Fatalf("container stdin: %q, %v; want the input, then EOF", got, err)
	}
	select {
	case err := <-r.done:
		t.Fatalf("attach ended (%v) before the container's output did", err)
	default:
	}
	f.exit()
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
}

func TestStdinEndWithoutStdinOnceDetachesAndKeepsStdin(t *testing.T) {
	client, f := serveFake(t, false)
	r := attach(client, strings.NewReader("x"))
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("attach still open after the client's stdin ended")
	}
	f.waitSubscribers(t, 0)
	// The container's stdin is still open: a later client can write to it.
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	attach(client, stdinR)
	f.waitSubscribers(t, 1)
	if _, err := io.WriteString(stdinW, "y"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if _, err := io.ReadFull(f.stdinR, got); err != nil || string(got) != "xy" {
		t.Fatalf("container stdin: %q, %v", got, err)
	}
}

func TestAttachRefusesUnknownAndEndedContainers(t *testing.T) {
	client, f := serveFake(t, false)
	err := client.Attach(context.Background(), "nope", monitor.AttachRequest{Stdout: true}, monitor.AttachStreams{})
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown container: %v, want NotFound", err)
	}
	f.exit()
	<-f.c.copied
	err = client.Attach(context.Background(), "c1", monitor.AttachRequest{Stdout: true}, monitor.AttachStreams{})
	if !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("ended output: %v, want FailedPrecondition", err)
	}
}

// A client that never reads misses output instead of blocking the
// container: publishing returns at once and the queue stays bounded.
func TestSlowSubscriberDropsInsteadOfBlocking(t *testing.T) {
	fan := newFanout()
	slow, _ := fan.subscribe(true, true)
	onlyErr, _ := fan.subscribe(false, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10*attachBuffer; i++ {
			fan.publish(monitor.FrameStdout, []byte("line\n"))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("publish blocked on a client that does not read")
	}
	if len(slow.chunks) != attachBuffer || slow.dropped != 9*attachBuffer {
		t.Errorf("slow client: %d queued, %d dropped", len(slow.chunks), slow.dropped)
	}
	if len(onlyErr.chunks) != 0 {
		t.Errorf("a stderr-only client got %d stdout chunks", len(onlyErr.chunks))
	}
	fan.close()
	if _, ok := fan.subscribe(true, true); ok {
		t.Error("subscribe after the output ended succeeded")
	}
	fan.unsubscribe(slow) // after close: must not close its queue twice
}

// A published chunk is a copy: the reader's buffer is reused at once.
func TestPublishCopiesTheChunk(t *testing.T) {
	fan := newFanout()
	sub, _ := fan.subscribe(true, false)
	buf := []byte("abc")
	if _, err := (teeReader{r: bytes.NewReader(buf), kind: monitor.FrameStdout, fan: fan}).Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	fan.publish(monitor.FrameStdout, buf)
	buf[0] = 'X'
	<-sub.chunks
	if got := (<-sub.chunks).data; string(got) != "abc" {
		t.Errorf("queued chunk %q changed with the reader's buffer", got)
	}
}
