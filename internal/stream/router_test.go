package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestWebSocketV5UnknownTokenIsNotFound(t *testing.T) {
	fake := newScripted()
	s := startServer(t, fake)
	u := "http://" + s.Addr() + "/exec/nosuchtoken"
	if err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil {
		t.Error("a WebSocket stream with an unknown token succeeded")
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token: status %s, want 404", resp.Status)
	}
	if fake.Calls() != 0 {
		t.Errorf("the runtime ran %d times for unknown tokens", fake.Calls())
	}
}

func TestTokensServeOneStreamWhateverTheProtocol(t *testing.T) {
	fake := newScripted()
	s := startServer(t, fake)
	opts := remotecommand.StreamOptions{Stdout: io.Discard}
	ws := func(u string) error { return wsStream(context.Background(), t, u, opts) }
	spdy := func(u string) error { return spdyStream(t, u, opts) }
	for _, tc := range []struct {
		name          string
		first, second func(string) error
	}{
		{"v5 then v5", ws, ws},
		{"v5 then SPDY", ws, spdy},
		{"SPDY then v5", spdy, ws},
		{"SPDY then SPDY", spdy, spdy},
	} {
		before := fake.Calls()
		u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"print", "x", "", "0"}, Stdout: true})
		if err := tc.first(u); err != nil {
			t.Errorf("%s: first use: %v", tc.name, err)
		}
		if err := tc.second(u); err == nil {
			t.Errorf("%s: the second use of a token succeeded", tc.name)
		}
		if n := fake.Calls() - before; n != 1 {
			t.Errorf("%s: the runtime ran %d times, want once", tc.name, n)
		}
	}
}

func TestV5UseConsumesTheLibraryToken(t *testing.T) {
	s := startServer(t, newScripted())
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"print", "x", "", "0"}, Stdout: true})
	if err := wsStream(context.Background(), t, u, remotecommand.StreamOptions{Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	bare := httptest.NewServer(s.lib) // the library without berth in front
	defer bare.Close()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := spdyStream(t, bare.URL+parsed.Path, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil {
		t.Error("the library still served a token that berth had served over v5")
	}
}

func TestSPDYAndOlderWebSocketsStillGoToTheLibrary(t *testing.T) {
	s := startServer(t, newScripted())
	var out, errOut bytes.Buffer
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"print", "hello", "oops", "5"}, Stdout: true, Stderr: true})
	err := spdyStream(t, u, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	if code, isExit := exitCode(err); !isExit || code != 5 || out.String() != "hello" || errOut.String() != "oops" {
		t.Errorf("SPDY exec: stdout %q, stderr %q, err %v; want exit status 5", out.String(), errOut.String(), err)
	}
	out.Reset()
	u = execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"print", "old", "", "0"}, Stdout: true})
	err = wsStream(context.Background(), t, u, remotecommand.StreamOptions{Stdout: &out}, "v4.channel.k8s.io")
	if err != nil || out.String() != "old" {
		t.Errorf("WebSocket v4 exec: stdout %q, err %v", out.String(), err)
	}
}

// blockingExec starts an exec that runs until its context ends and returns
// the client's result.
func blockingExec(ctx context.Context, t *testing.T, s *Server, fake *scripted) <-chan error {
	t.Helper()
	u := execURL(t, s, &runtimeapi.ExecRequest{Cmd: []string{"block"}, Stdout: true})
	done := make(chan error, 1)
	go func() { done <- wsStream(ctx, t, u, remotecommand.StreamOptions{Stdout: io.Discard}) }()
	select {
	case <-fake.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the exec did not start")
	}
	return done
}

func wantEnded(t *testing.T, what string, fake *scripted) {
	t.Helper()
	select {
	case err := <-fake.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the exec's context ended with %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s: the exec still runs", what)
	}
}

func TestClientHangUpEndsTheExec(t *testing.T) {
	fake := newScripted()
	s := startServer(t, fake)
	ctx, cancel := context.WithCancel(context.Background())
	done := blockingExec(ctx, t, s, fake)
	cancel()
	wantEnded(t, "client hung up", fake)
	<-done //nolint:errcheck // a hang-up ends the client with an error
}

func TestCloseEndsWebSocketV5Streams(t *testing.T) {
	fake := newScripted()
	s := startServer(t, fake)
	done := blockingExec(context.Background(), t, s, fake)
	s.Close()
	wantEnded(t, "server closed", fake)
	if err := <-done; err == nil {
		t.Error("the client saw a stream ended by Close succeed")
	}
}
