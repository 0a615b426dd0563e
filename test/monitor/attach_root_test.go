package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
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

// session is one attach client running in the background.
type session struct {
	stdout, stderr *syncBuffer
	done           chan error
}

func (e *env) attach(id string, req monitor.AttachRequest, stdin io.Reader) session {
	s := session{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	go func() {
		s.done <- e.client.Attach(context.Background(), id, req, monitor.AttachStreams{Stdin: stdin, Stdout: s.stdout, Stderr: s.stderr})
	}()
	return s
}

func (s session) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("%s: attach ended with %v, want nil", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: attach still open after 10s", what)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) kill(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.runc.Kill(ctx, id, syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
}

// TestAttachFansOutOutputAndForwardsStdin: two clients see each stream;
// the one with stdin types into the container; both sessions end with
// the container's output, and the log holds everything.
func TestAttachFansOutOutputAndForwardsStdin(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-fan"
	logPath, _ := e.create(t, id, bundleOpts{stdin: true,
		args: sh(`while true; do echo tick; if read -t 0.05 line; then echo "read $line"; echo "err $line" >&2; exit 0; fi; done`)})
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	both := monitor.AttachRequest{Stdin: true, Stdout: true, Stderr: true}
	first, second := e.attach(id, both, stdinR), e.attach(id, monitor.AttachRequest{Stdout: true, Stderr: true}, nil)
	e.start(t, id)
	waitFor(t, "a tick at each client", func() bool {
		return strings.Contains(first.stdout.String(), "tick\n") && strings.Contains(second.stdout.String(), "tick\n")
	})
	if _, err := io.WriteString(stdinW, "typed\n"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []session{first, second} {
		waitFor(t, "the typed line at each client", func() bool {
			return strings.Contains(s.stdout.String(), "read typed\n") && s.stderr.String() == "err typed\n"
		})
	}
	first.wait(t, "first client")
	second.wait(t, "second client")
	if rec := e.waitExitFile(t, id, 10*time.Second); rec.ExitCode != 0 {
		t.Errorf("exit record %+v, want 0", rec)
	}
	recs := readLog(t, logPath)
	if got := crilog.Lines(recs, crilog.Stderr); len(got) != 1 || got[0] != "err typed" {
		t.Errorf("stderr in the log: %q", got)
	}
}

// TestStdinOnceClosesStdinWhenTheClientDetaches: with StdinOnce, the
// client's stdin ending closes the container's (cat then exits).
func TestStdinOnceClosesStdinWhenTheClientDetaches(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-once"
	logPath, _ := e.create(t, id, bundleOpts{stdin: true, stdinOnce: true, args: []string{"/bin/busybox", "cat"}})
	s := e.attach(id, monitor.AttachRequest{Stdin: true, Stdout: true}, strings.NewReader("last words\n"))
	e.start(t, id)
	s.wait(t, "client")
	if rec := e.waitExitFile(t, id, 10*time.Second); rec.ExitCode != 0 {
		t.Errorf("exit record %+v, want cat's 0 after its stdin closed", rec)
	}
	if got := crilog.Lines(readLog(t, logPath), crilog.Stdout); len(got) != 1 || got[0] != "last words" {
		t.Errorf("log %q, want the input echoed", got)
	}
}

// TestStdinEndWithoutStdinOnceKeepsStdin: the client's stdin ending only
// detaches it; the next client types on into the same stdin.
func TestStdinEndWithoutStdinOnceKeepsStdin(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-keep"
	logPath, _ := e.create(t, id, bundleOpts{stdin: true, args: []string{"/bin/busybox", "cat"}})
	e.start(t, id)
	first := e.attach(id, monitor.AttachRequest{Stdin: true, Stdout: true}, strings.NewReader("one\n"))
	first.wait(t, "first client")
	waitLines(t, logPath, 1)
	second := e.attach(id, monitor.AttachRequest{Stdin: true, Stdout: true}, strings.NewReader("two\n"))
	second.wait(t, "second client")
	waitLines(t, logPath, 2)
	if _, err := monitor.ReadExitFile(e.exitDir, id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("exit file: %v; want none, cat still reading", err)
	}
	e.kill(t, id)
	if rec := e.waitExitFile(t, id, 10*time.Second); rec.ExitCode != 137 {
		t.Errorf("exit record %+v, want 137", rec)
	}
}

// TestAttachRefusesUnknownAndEndedContainers: the errors carry their
// classes.
func TestAttachRefusesUnknownAndEndedContainers(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.client.Attach(ctx, "nope", monitor.AttachRequest{Stdout: true}, monitor.AttachStreams{Stdout: io.Discard})
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("attach to unknown: %v, want NotFound", err)
	}
	id := e.prefix + "-ended"
	e.create(t, id, bundleOpts{args: sh("exit 0")})
	e.start(t, id)
	e.waitExitFile(t, id, 10*time.Second)
	waitFor(t, "list shows the exit", func() bool {
		infos, err := e.client.List(ctx)
		return err == nil && len(infos) == 1 && !infos[0].Running
	})
	err = e.client.Attach(ctx, id, monitor.AttachRequest{Stdout: true}, monitor.AttachStreams{Stdout: io.Discard})
	if !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("attach to an exited container: %v, want FailedPrecondition", err)
	}
}

// blockedWriter never returns from Write until released.
type blockedWriter struct{ release chan struct{} }

func (w blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// TestSlowClientDropsOutputInsteadOfBlocking: a client that reads nothing
// holds up neither the container nor its log.
func TestSlowClientDropsOutputInsteadOfBlocking(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-slow"
	logPath, _ := e.create(t, id, bundleOpts{args: sh("i=0; while [ $i -lt 20000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done")})
	stuck := blockedWriter{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.client.Attach(ctx, id, monitor.AttachRequest{Stdout: true}, monitor.AttachStreams{Stdout: stuck})
	}()
	e.start(t, id)
	if rec := e.waitExitFile(t, id, 30*time.Second); rec.ExitCode != 0 {
		t.Errorf("exit record %+v, want 0", rec)
	}
	if n := len(crilog.Lines(readLog(t, logPath), crilog.Stdout)); n != 20000 {
		t.Errorf("log holds %d lines, want all 20000", n)
	}
	cancel()
	close(stuck.release)
	if err := <-done; err == nil {
		t.Error("the stuck client's session ended without an error; want the cancel's")
	}
}

// TestAdoptReadsOnAndReportsAnUnknownExit: a second monitor takes over the
// container of one killed -9: the log goes on from its FIFOs, and the exit
// (not its child: status unknown) is 255.
func TestAdoptReadsOnAndReportsAnUnknownExit(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-adopted"
	logPath, pid := e.create(t, id, bundleOpts{args: sh("while true; do echo tick; sleep 0.02; done")})
	e.start(t, id)
	waitLines(t, logPath, 3)
	if err := syscall.Kill(e.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The daemon's read ends keep the FIFOs' writers from SIGPIPE while no
	// monitor runs; the test holds them as the daemon does.
	bundleDir := e.dir + "/bundles/" + id
	for _, name := range []string{monitor.StdoutFIFO, monitor.StderrFIFO} {
		f, err := monitor.OpenFIFO(bundleDir, name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	e.socket += ".2"
	e.client = monitor.NewClient(e.socket)
	e.launch(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.client.Adopt(ctx, monitor.AdoptRequest{ID: id, Pid: pid, Bundle: bundleDir, Started: true,
		LogDirectory: e.dir + "/logs", LogRelPath: id + "/0.log"}); err != nil {
		t.Fatal(err)
	}
	n := len(crilog.Lines(readLog(t, logPath), crilog.Stdout))
	waitLines(t, logPath, n+5)
	e.kill(t, id)
	rec := e.waitExitFile(t, id, 10*time.Second)
	if !rec.Unknown || rec.ExitCode != 255 || rec.Pid != pid {
		t.Errorf("exit record %+v, want unknown, 255, pid %d", rec, pid)
	}
	if err := e.client.Adopt(ctx, monitor.AdoptRequest{ID: id, Pid: pid}); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("adopt of a known id: %v, want AlreadyExists", err)
	}
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Adopt(ctx, monitor.AdoptRequest{ID: id + "-gone", Pid: gone.Process.Pid}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("adopt of an ended pid: %v, want NotFound", err)
	}
	if err := e.client.Adopt(ctx, monitor.AdoptRequest{ID: "../x", Pid: os.Getpid()}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("adopt with a bad id: %v, want InvalidArgument", err)
	}
}

// TestStalledClientIsDropped: a client that takes no output for 10 s
// (the monitor's write deadline) loses its session while the container
// runs on; it finds the connection closed once it reads what was sent.
func TestStalledClientIsDropped(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	id := e.prefix + "-stalled"
	e.create(t, id, bundleOpts{args: sh("while true; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")})
	e.start(t, id)
	conn, err := net.Dial("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := monitor.Request{Version: monitor.ProtocolVersion, Op: monitor.OpAttach, ID: id, Attach: &monitor.AttachRequest{Stdout: true}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(11 * time.Second) // the stall itself: the client reads nothing past the deadline
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("reading the stalled session: %v; want the monitor to have closed it", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := e.client.List(ctx)
	if err != nil || len(infos) != 1 || !infos[0].Running {
		t.Fatalf("list: %+v, %v; want the container running on", infos, err)
	}
}
