package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

// streamExec asks for an exec URL over CRI and runs it with the SPDY
// executor, as kubectl and crictl do.
func (d *daemon) streamExec(req *runtimeapi.ExecRequest, opts remotecommand.StreamOptions) error {
	d.T.Helper()
	resp, err := d.RT.Exec(d.ctx(), req)
	if err != nil {
		d.T.Fatalf("Exec %v: %v", req.GetCmd(), err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil || u.Hostname() != "127.0.0.1" {
		d.T.Fatalf("Exec URL %q: not on 127.0.0.1 (%v)", resp.GetUrl(), err)
	}
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		d.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exe.StreamWithContext(ctx, opts)
}

type fixedSize struct{ sent bool }

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	if f.sent {
		select {} // one size is enough; the executor stops asking at the end
	}
	f.sent = true
	return &remotecommand.TerminalSize{Width: 123, Height: 45}
}

func TestStreamingExec(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "streamexec")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, sleeper("sleeper"))

	checkExecStreams(t, id, d.streamExec)

	_, err := d.RT.Exec(d.ctx(), &runtimeapi.ExecRequest{ContainerId: "nosuchcontainer", Cmd: []string{"true"}, Stdout: true})
	wantCode(t, "Exec of an unknown container", err, codes.NotFound)
	d.stopAndRemovePod(podID)
}

// checkExecStreams runs the exec cases every streaming transport must
// pass, through run: stdin echoed back until the client closes it, stdout,
// stderr and a non-zero exit code, and a TTY with its window size.
func checkExecStreams(t *testing.T, id string, run func(*runtimeapi.ExecRequest, remotecommand.StreamOptions) error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"cat"}, Stdin: true, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdin: strings.NewReader("hello over stdin\n"), Stdout: &out, Stderr: &errOut})
	if err != nil || out.String() != "hello over stdin\n" {
		t.Errorf("exec cat: stdout %q, stderr %q, err %v; want the stdin echoed", out.String(), errOut.String(), err)
	}

	out.Reset()
	errOut.Reset()
	err = run(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo $BERTH_EXEC_TEST; echo oops >&2; exit 7"}, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 7 {
		t.Errorf("exec exit 7: err = %v, want exit status 7", err)
	}
	if out.String() != "inherited\n" || errOut.String() != "oops\n" {
		t.Errorf("exec: stdout %q, stderr %q", out.String(), errOut.String())
	}

	out.Reset()
	// The size is sent as the stream opens; sleep so that it has surely
	// reached the container's terminal before stty reads it.
	err = run(&runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "sleep 1; tty; stty size"}, Stdout: true, Tty: true},
		remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &fixedSize{}})
	if err != nil {
		t.Errorf("exec with tty: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "/dev/pts/") || !strings.Contains(got, "45 123") {
		t.Errorf("exec with tty printed %q, want a /dev/pts name and the size 45 123", got)
	}

}

func TestPortForward(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "portforward")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, shell("httpd",
		"mkdir -p /tmp/www && echo hello-from-the-pod > /tmp/www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /tmp/www"))
	// The forwarder gives up at the first refused connection: wait until
	// httpd listens (on the pod's loopback only, which only a dial inside
	// the pod's network namespace reaches).
	if !eventually(10*time.Second, func() bool {
		resp, err := d.execSync(id, 5, "wget", "-q", "-O", "-", "http://127.0.0.1:8080/index.html")
		return err == nil && resp.GetExitCode() == 0
	}) {
		t.Fatal("httpd in the pod does not answer on 127.0.0.1:8080")
	}

	resp, err := d.RT.PortForward(d.ctx(), &runtimeapi.PortForwardRequest{PodSandboxId: podID, Port: []int32{8080}})
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("PortForward URL %q: not on 127.0.0.1 (%v)", resp.GetUrl(), err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	forwarded := make(chan error, 1)
	go func() { forwarded <- fw.ForwardPorts() }()
	defer func() { close(stop); <-forwarded }() //nolint:errcheck // stopped: its error is the stop
	select {
	case <-ready:
	case err := <-forwarded:
		t.Fatalf("port forward ended before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port forward not ready after 10 s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports: %v, %v", ports, err)
	}
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[0].Local))
	if err != nil || body != "hello-from-the-pod\n" {
		t.Errorf("GET through the port forward: %q, %v", body, err)
	}
	d.stopAndRemovePod(podID)
}

func httpGet(u string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return string(b), err
}
