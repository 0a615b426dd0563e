package stream

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

type fakeContainers struct {
	code int
	err  error
	got  pod.ExecStreams
}

func (f *fakeContainers) Exec(_ context.Context, _ string, _ []string, st pod.ExecStreams) (int, error) {
	f.got = st
	if st.Stdout != nil {
		_, _ = io.WriteString(st.Stdout, "out") // the test reads what arrived
	}
	return f.code, f.err
}

func (f *fakeContainers) Attach(_ context.Context, _ string, st pod.ExecStreams) error {
	f.got = st
	if st.Stdout != nil {
		_, _ = io.WriteString(st.Stdout, "attached") // the test reads what arrived
	}
	return f.err
}

type fakeSandboxes map[string]pod.Sandbox

func (f fakeSandboxes) Sandbox(id string) (pod.Sandbox, error) {
	sb, ok := f[id]
	if !ok {
		return pod.Sandbox{}, errdefs.ErrNotFound
	}
	return sb, nil
}

type writeCloser struct {
	strings.Builder
	closed bool
}

func (w *writeCloser) Close() error { w.closed = true; return nil }

func TestExecReportsExitCodes(t *testing.T) {
	fc := &fakeContainers{code: 7}
	r := &runtime{cfg: Config{Containers: fc}}
	out := &writeCloser{}
	err := r.Exec(context.Background(), "c", []string{"x"}, nil, out, nil, false, nil)
	var exitErr exitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 7 || !exitErr.Exited() {
		t.Errorf("Exec = %v, want exit status 7", err)
	}
	if out.String() != "out" || !out.closed {
		t.Errorf("stdout %q closed=%v; want the output, closed", out.String(), out.closed)
	}
	if fc.got.Stderr != nil {
		t.Error("a nil stderr stream reached the pod service as non-nil")
	}
	fc.code = 0
	if err := r.Exec(context.Background(), "c", []string{"x"}, nil, &writeCloser{}, nil, false, nil); err != nil {
		t.Errorf("Exec exiting 0 = %v", err)
	}
}

func TestAttachPassesStreamsAndClosesThem(t *testing.T) {
	fc := &fakeContainers{}
	r := &runtime{cfg: Config{Containers: fc}}
	out := &writeCloser{}
	if err := r.Attach(context.Background(), "c", strings.NewReader("in"), out, nil, true, nil); err != nil {
		t.Fatalf("Attach = %v", err)
	}
	if out.String() != "attached" || !out.closed {
		t.Errorf("stdout %q closed=%v; want the output, closed", out.String(), out.closed)
	}
	if fc.got.Stdin == nil || fc.got.Stderr != nil || !fc.got.TTY {
		t.Errorf("streams reaching the pod service: %+v", fc.got)
	}
	fc.err = errdefs.ErrFailedPrecondition
	if err := r.Attach(context.Background(), "c", nil, &writeCloser{}, nil, false, nil); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("Attach to a stopped container = %v, want FailedPrecondition", err)
	}
}

func TestPortForwardDialsLoopbackInThePodNetns(t *testing.T) {
	var dialed []string
	r := &runtime{cfg: Config{
		Sandboxes: fakeSandboxes{"p1": {ID: "p1", NetNS: "/run/x/ns/net"}},
		Dial: func(_ context.Context, netns, network, addr string) (net.Conn, error) {
			dialed = append(dialed, netns, network, addr)
			podSide, ours := net.Pipe()
			go func() { // an echo server inside the "pod"
				_, _ = io.Copy(podSide, podSide) // ends when either side closes
				podSide.Close()
			}()
			return ours, nil
		},
	}}
	client, stream := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.PortForward(context.Background(), "p1", 8080, stream) }()
	if _, err := io.WriteString(client, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "ping" {
		t.Errorf("echo through the forward: %q, %v", buf, err)
	}
	client.Close()
	<-done //nolint:errcheck // the closed pipe ends the forward either way
	if strings.Join(dialed, " ") != "/run/x/ns/net tcp4 127.0.0.1:8080" {
		t.Errorf("dialed %q", dialed)
	}
	if err := r.PortForward(context.Background(), "nope", 80, &writeCloserRW{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("PortForward to an unknown sandbox = %v, want NotFound", err)
	}
}

type writeCloserRW struct{ writeCloser }

func (w *writeCloserRW) Read([]byte) (int, error) { return 0, io.EOF }
