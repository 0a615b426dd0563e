package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

// streamWebSocket runs a streaming URL with client-go's WebSocket executor,
// which offers only protocol v5, as crictl --transport websocket and
// kubelet's WebSocket path do.
func (d *daemon) streamWebSocket(rawURL string, opts remotecommand.StreamOptions) error {
	d.t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		d.t.Fatalf("stream URL %q: not on 127.0.0.1 (%v)", rawURL, err)
	}
	exe, err := remotecommand.NewWebSocketExecutor(&rest.Config{}, http.MethodGet, rawURL)
	if err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exe.StreamWithContext(ctx, opts)
}

func (d *daemon) execWebSocket(req *runtimeapi.ExecRequest, opts remotecommand.StreamOptions) error {
	d.t.Helper()
	resp, err := d.rt.Exec(d.ctx(), req)
	if err != nil {
		d.t.Fatalf("Exec %v: %v", req.GetCmd(), err)
	}
	return d.streamWebSocket(resp.GetUrl(), opts)
}

func TestStreamingExecWebSocket(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "streamws")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, sleeper("sleeper"))

	// cat ends only when the client's close signal for stdin arrives.
	var out, errOut bytes.Buffer
	err := d.execWebSocket(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"cat"}, Stdin: true, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdin: strings.NewReader("hello over stdin\n"), Stdout: &out, Stderr: &errOut})
	if err != nil || out.String() != "hello over stdin\n" {
		t.Errorf("exec cat: stdout %q, stderr %q, err %v; want the stdin echoed", out.String(), errOut.String(), err)
	}

	out.Reset()
	errOut.Reset()
	err = d.execWebSocket(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo $BERTH_EXEC_TEST; echo oops >&2; exit 7"}, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 7 {
		t.Errorf("exec exit 7: err = %v, want exit status 7", err)
	}
	if out.String() != "inherited\n" || errOut.String() != "oops\n" {
		t.Errorf("exec: stdout %q, stderr %q", out.String(), errOut.String())
	}

	out.Reset()
	err = d.execWebSocket(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "sleep 1; tty; stty size"}, Stdout: true, Tty: true},
		remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &fixedSize{}})
	if err != nil {
		t.Errorf("exec with tty: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "/dev/pts/") || !strings.Contains(got, "45 123") {
		t.Errorf("exec with tty printed %q, want a /dev/pts name and the size 45 123", got)
	}

	cfg := containerConfig("reader", "sh")
	cfg.Stdin, cfg.StdinOnce = true, true
	reader := d.run(podID, podCfg, cfg)
	resp, err := d.rt.Attach(d.ctx(), &runtimeapi.AttachRequest{ContainerId: reader, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	out.Reset()
	err = d.streamWebSocket(resp.GetUrl(), remotecommand.StreamOptions{Stdin: strings.NewReader("echo bye\n"), Stdout: &out, Stderr: io.Discard})
	if err != nil || out.String() != "bye\n" {
		t.Errorf("attach with stdin once: stdout %q, err %v; want bye", out.String(), err)
	}
	d.stopAndRemovePod(podID)
}
