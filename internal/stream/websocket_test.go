package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// scripted is a fake container whose exec runs the command named by
// cmd[0]; it is safe for the concurrent use the HTTP server makes of it.
type scripted struct {
	mu      sync.Mutex
	calls   int
	started chan struct{} // a "block" exec began
	ended   chan error    // a "block" exec ended, with its context's error
}

func newScripted() *scripted {
	return &scripted{started: make(chan struct{}, 1), ended: make(chan error, 1)}
}

func (s *scripted) count() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
}

func (s *scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *scripted) Exec(ctx context.Context, _ string, cmd []string, st pod.ExecStreams) (int, error) {
	s.count()
	switch cmd[0] {
	case "print": // print STDOUT STDERR CODE
		_, _ = io.WriteString(st.Stdout, cmd[1]) // the client checks what arrived
		if st.Stderr != nil {
			_, _ = io.WriteString(st.Stderr, cmd[2])
		}
		return strconv.Atoi(cmd[3])
	case "cat": // ends only when stdin does
		_, _ = io.Copy(st.Stdout, st.Stdin)
		return 0, nil
	case "size": // prints the first terminal size
		select {
		case size := <-st.Resize:
			fmt.Fprintf(st.Stdout, "%dx%d", size.Width, size.Height)
			return 0, nil
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	case "block": // runs until its context ends
		s.started <- struct{}{}
		<-ctx.Done()
		s.ended <- ctx.Err()
		return -1, ctx.Err()
	}
	return -1, fmt.Errorf("no such command %q: %w", cmd[0], errdefs.ErrNotFound)
}

func (s *scripted) Attach(_ context.Context, _ string, st pod.ExecStreams) error {
	s.count()
	_, _ = io.WriteString(st.Stdout, "attached:") // the client checks what arrived
	_, _ = io.Copy(st.Stdout, st.Stdin)
	return nil
}

func startServer(t *testing.T, c Containers) *Server {
	t.Helper()
	s, err := Listen(Config{
		Address: "127.0.0.1:0", Containers: c, Sandboxes: fakeSandboxes{},
		Dial: func(context.Context, string, string, string) (net.Conn, error) {
			return nil, errors.New("no network in this test")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }() // ends with Close
	t.Cleanup(func() { s.Close() })
	return s
}

func execURL(t *testing.T, s *Server, req *runtimeapi.ExecRequest) string {
	t.Helper()
	req.ContainerId = "c1"
	resp, err := s.GetExec(req)
	if err != nil {
		t.Fatalf("GetExec: %v", err)
	}
	return resp.GetUrl()
}

// wsStream runs a stream the way crictl --transport websocket and kubelet
// do: client-go's WebSocket executor, which offers only protocol v5 unless
// told otherwise.
func wsStream(ctx context.Context, t *testing.T, rawURL string, opts remotecommand.StreamOptions, protocols ...string) error {
	t.Helper()
	var exe remotecommand.Executor
	var err error
	if len(protocols) == 0 {
		exe, err = remotecommand.NewWebSocketExecutor(&rest.Config{}, http.MethodGet, rawURL)
	} else {
		exe, err = remotecommand.NewWebSocketExecutorForProtocols(&rest.Config{}, http.MethodGet, rawURL, protocols...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return exe.StreamWithContext(ctx, opts)
}

func spdyStream(t *testing.T, rawURL string, opts remotecommand.StreamOptions) error {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exe.StreamWithContext(ctx, opts)
}

func exitCode(err error) (int, bool) {
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitStatus(), true
	}
	return 0, false
}

func TestWebSocketV5ExecOutputAndExitCodes(t *testing.T) {
	s := startServer(t, newScripted())
	for _, code := range []int{0, 3} {
		var out, errOut bytes.Buffer
		u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"print", "hello", "oops", strconv.Itoa(code)}, Stdout: true, Stderr: true})
		err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		if got, isExit := exitCode(err); code == 0 && err != nil || code != 0 && (!isExit || got != code) {
			t.Errorf("exit %d: err = %v, want exit status %d", code, err, code)
		}
		if out.String() != "hello" || errOut.String() != "oops" {
			t.Errorf("exit %d: stdout %q, stderr %q", code, out.String(), errOut.String())
		}
	}
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"nosuchcommand"}, Stdout: true})
	err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{Stdout: io.Discard})
	if _, isExit := exitCode(err); err == nil || isExit || !strings.Contains(err.Error(), "no such command") {
		t.Errorf("failing exec: err = %v, want the runtime's error", err)
	}
}

func TestWebSocketV5StdinHalfClose(t *testing.T) {
	s := startServer(t, newScripted())
	var out bytes.Buffer
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"cat"}, Stdin: true, Stdout: true, Stderr: true})
	err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{
		Stdin: strings.NewReader("hello over stdin\n"), Stdout: &out, Stderr: io.Discard,
	})
	if err != nil || out.String() != "hello over stdin\n" {
		t.Errorf("exec cat: stdout %q, err %v; want stdin echoed and the end of stdin passed on", out.String(), err)
	}
}

// sizes hands out terminal sizes, then ends the queue.
type sizes struct{ queue []remotecommand.TerminalSize }

func (q *sizes) Next() *remotecommand.TerminalSize {
	if len(q.queue) == 0 {
		return nil
	}
	size := q.queue[0]
	q.queue = q.queue[1:]
	return &size
}

func TestWebSocketV5TTYResize(t *testing.T) {
	s := startServer(t, newScripted())
	var out bytes.Buffer
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"size"}, Stdout: true, Tty: true})
	err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{
		Stdout: &out, Tty: true, TerminalSizeQueue: &sizes{queue: []remotecommand.TerminalSize{{Width: 123, Height: 45}}},
	})
	if err != nil || out.String() != "123x45" {
		t.Errorf("tty exec: stdout %q, err %v; want the size 123x45 to reach the runtime", out.String(), err)
	}
}

func TestWebSocketV5Attach(t *testing.T) {
	s := startServer(t, newScripted())
	resp, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c1", Stdin: true, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = wsStream(context.Background(), t, resp.GetUrl(), remotecommand.StreamOptions{Stdin: strings.NewReader("hi"), Stdout: &out})
	if err != nil || out.String() != "attached:hi" {
		t.Errorf("attach: stdout %q, err %v", out.String(), err)
	}
}
