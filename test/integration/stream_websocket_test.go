package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamWebSocket runs a streaming URL with client-go's WebSocket executor,
// which offers only protocol v5, as crictl --transport websocket and
// kubelet's WebSocket path do.
func (d *daemon) streamWebSocket(rawURL string, opts remotecommand.StreamOptions) error {
	d.T.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		d.T.Fatalf("stream URL %q: not on 127.0.0.1 (%v)", rawURL, err)
	}
	exe, err := remotecommand.NewWebSocketExecutor(&rest.Config{}, http.MethodGet, rawURL)
	if err != nil {
		d.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exe.StreamWithContext(ctx, opts)
}

func (d *daemon) execWebSocket(req *runtimeapi.ExecRequest, opts remotecommand.StreamOptions) error {
	d.T.Helper()
	resp, err := d.RT.Exec(d.ctx(), req)
	if err != nil {
		d.T.Fatalf("Exec %v: %v", req.GetCmd(), err)
	}
	return d.streamWebSocket(resp.GetUrl(), opts)
}

func TestStreamingExecWebSocket(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "streamws")
	podID := d.runPod(podCfg)
	id := d.run(podID, podCfg, sleeper("sleeper"))

	// cat ends only when the client's close signal for stdin arrives.
	checkExecStreams(t, id, d.execWebSocket)

	cfg := containerConfig("reader", "sh")
	cfg.Stdin, cfg.StdinOnce = true, true
	reader := d.run(podID, podCfg, cfg)
	resp, err := d.RT.Attach(d.ctx(), &runtimeapi.AttachRequest{ContainerId: reader, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	var out bytes.Buffer
	err = d.streamWebSocket(resp.GetUrl(), remotecommand.StreamOptions{Stdin: strings.NewReader("echo bye\n"), Stdout: &out, Stderr: io.Discard})
	if err != nil || out.String() != "bye\n" {
		t.Errorf("attach with stdin once: stdout %q, err %v; want bye", out.String(), err)
	}
	d.stopAndRemovePod(podID)
}
