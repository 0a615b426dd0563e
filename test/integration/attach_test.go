package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// lockedBuffer collects a stream's output while the test polls it.
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

// streamAttach asks for an attach URL over CRI and runs it with the SPDY
// executor in the background; the returned channel gets its result.
func (d *daemon) streamAttach(ctx context.Context, req *runtimeapi.AttachRequest, opts remotecommand.StreamOptions) <-chan error {
	d.T.Helper()
	resp, err := d.RT.Attach(d.ctx(), req)
	if err != nil {
		d.T.Fatalf("Attach %s: %v", req.GetContainerId(), err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil || u.Hostname() != "127.0.0.1" {
		d.T.Fatalf("Attach URL %q: not on 127.0.0.1 (%v)", resp.GetUrl(), err)
	}
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		d.T.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- exe.StreamWithContext(ctx, opts) }()
	return done
}

func waitStream(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still streaming after 30s", what)
	}
}

func TestAttachSeesOutputOfARunningContainer(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "attachout")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, shell("ticker", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lockedBuffer
	done := d.streamAttach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
	if !eventually(10*time.Second, func() bool { return strings.Count(out.String(), "\n") >= 3 }) {
		t.Fatalf("attached for 10s, saw %q; want lines every 100 ms", out.String())
	}
	for _, line := range splitLines(out.String()) {
		if !strings.HasPrefix(line, "tick ") {
			t.Errorf("attached output line %q is not the container's", line)
		}
	}
	cancel()
	select {
	case <-done: //nolint:errcheck // ended by the cancel: its error says so
	case <-time.After(30 * time.Second):
		t.Fatal("attach did not end when the client went away")
	}
	if st := d.containerStatus(id); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container is %v after the client detached, want RUNNING", st.GetState())
	}
	d.stopAndRemovePod(podID)
}

func TestAttachTerminalStdinAndStdinOnce(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "attachtty")
	podID := d.runPod(podCfg)
	cfg := containerConfig("shell", "sh")
	cfg.Stdin, cfg.StdinOnce, cfg.Tty = true, true, true
	id := d.run(podID, podCfg, cfg)

	stdinR, stdinW := io.Pipe()
	var out lockedBuffer
	done := d.streamAttach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Tty: true},
		remotecommand.StreamOptions{Stdin: stdinR, Stdout: &out, Tty: true, TerminalSizeQueue: &fixedSize{}})
	if _, err := io.WriteString(stdinW, "echo hi\n"); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return strings.Contains(out.String(), "\nhi\r\n") }) {
		t.Fatalf("terminal shows %q, want the output hi", out.String())
	}
	if _, err := io.WriteString(stdinW, "stty size\n"); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return strings.Contains(out.String(), "45 123") }) {
		t.Errorf("terminal shows %q, want the size 45 123 the client sent", out.String())
	}
	stdinW.Close() // detach: with StdinOnce the shell's stdin ends
	waitStream(t, "attach after detaching", done)
	d.waitExited(id, 10*time.Second)
	d.stopAndRemovePod(podID)
}

func TestAttachStdinOnceWithoutTerminal(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "attachonce")
	podID := d.runPod(podCfg)
	cfg := containerConfig("reader", "sh")
	cfg.Stdin, cfg.StdinOnce = true, true
	id := d.run(podID, podCfg, cfg)

	var out lockedBuffer
	done := d.streamAttach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdin: strings.NewReader("echo bye\n"), Stdout: &out, Stderr: io.Discard})
	waitStream(t, "attach with stdin once", done)
	if out.String() != "bye\n" {
		t.Errorf("attached stdout %q, want bye", out.String())
	}
	if st := d.waitExited(id, 10*time.Second); st.GetExitCode() != 0 {
		t.Errorf("shell exited %d after its stdin closed, want 0", st.GetExitCode())
	}
	d.stopAndRemovePod(podID)
}
