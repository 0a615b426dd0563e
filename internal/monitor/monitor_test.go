package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestExitFileRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exits")
	want := ExitRecord{ID: "abc", Pid: 42, ExitCode: 137, Signal: 9, OOMKilled: true,
		FinishedAt: time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)}
	if err := WriteExitFile(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadExitFile(dir, "abc")
	if err != nil {
		t.Fatal(err)
	}
	want.Version = ExitRecordVersion
	if *got != want {
		t.Fatalf("got %+v, want %+v", *got, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "abc.json" {
		t.Fatalf("exit dir holds %v, want only abc.json", entries)
	}
	// Overwriting replaces the record whole.
	want.ExitCode = 1
	if err := WriteExitFile(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadExitFile(dir, "abc"); got.ExitCode != 1 {
		t.Fatalf("rewrite: got code %d", got.ExitCode)
	}
}

func TestExitFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadExitFile(dir, "missing"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("missing: got %v, want NotFound", err)
	}
	for _, id := range []string{"", "..", "a/b"} {
		if err := WriteExitFile(dir, ExitRecord{ID: id}); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("write id %q: got %v, want InvalidArgument", id, err)
		}
		if _, err := ReadExitFile(dir, id); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("read id %q: got %v, want InvalidArgument", id, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "future.json"), []byte(`{"version":99,"id":"future"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitFile(dir, "future"); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Fatalf("future version: got %v", err)
	}
}

func TestErrorClassesSurviveTheWire(t *testing.T) {
	for _, c := range errorClasses { // as the monitor words them: the message ends with the class's text
		class := c.err
		resp := Response{Version: ProtocolVersion, Error: "container x: " + class.Error(), ErrorClass: c.name}
		data, _ := json.Marshal(resp)
		var back Response
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		err := back.Err()
		if !errors.Is(err, class) {
			t.Errorf("%v: class lost: %v", class, err)
		}
		if strings.Count(err.Error(), class.Error()) != 1 {
			t.Errorf("%v: message %q repeats the class", class, err)
		}
	}
	if err := (Response{Version: ProtocolVersion, Error: "plain"}).Err(); err == nil || err.Error() != "plain" {
		t.Fatalf("classless error: %v", err)
	}
}

// fakeMonitor answers every connection with handler's response.
func fakeMonitor(t *testing.T, handler func(Request) Response) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			var req Request
			_ = json.NewDecoder(conn).Decode(&req) // a bad request reaches handler as the zero Request
			if handler != nil {
				_ = json.NewEncoder(conn).Encode(handler(req)) // the client sees a short answer
				conn.Close()
			} // nil handler: never answer, keep the connection
		}
	}()
	return sock
}

func TestClientCalls(t *testing.T) {
	var seen []Request
	sock := fakeMonitor(t, func(r Request) Response {
		seen = append(seen, r)
		switch r.Op {
		case OpCreate:
			return Response{Version: ProtocolVersion, Pid: 1234}
		case OpStart:
			return Response{Version: ProtocolVersion, Error: "container " + r.ID + ": not found", ErrorClass: "not_found"}
		case OpList:
			return Response{Version: ProtocolVersion, Containers: []ContainerInfo{{ID: "a", Pid: 1, Running: true}}}
		}
		return Response{Version: ProtocolVersion}
	})
	c := NewClient(sock)
	ctx := context.Background()
	pid, err := c.Create(ctx, CreateRequest{ID: "a", Bundle: "/b", LogPath: "/l", Terminal: true})
	if err != nil || pid != 1234 {
		t.Fatalf("create: %d %v", pid, err)
	}
	if seen[0].Version != ProtocolVersion || seen[0].Create == nil || !seen[0].Create.Terminal {
		t.Fatalf("create request on the wire: %+v", seen[0])
	}
	if err := c.Start(ctx, "zz"); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "container zz") {
		t.Fatalf("start: got %v, want NotFound naming the container", err)
	}
	infos, err := c.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].ID != "a" {
		t.Fatalf("list: %+v %v", infos, err)
	}
	for _, call := range []func(context.Context) error{c.Ping, c.Shutdown} {
		if err := call(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClientUnreachableAndTimeout(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "absent.sock"))
	if err := c.Ping(context.Background()); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("absent socket: got %v, want Unavailable", err)
	}
	silent := NewClient(fakeMonitor(t, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := silent.Ping(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("silent monitor: got %v after %s", err, time.Since(start))
	}
}

func TestLaunchReportsEarlyExit(t *testing.T) {
	_, err := Launch(LaunchOptions{Binary: "/bin/true", PodID: "p", Socket: "/nonexistent/s", ExitDir: t.TempDir()})
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("got %v, want Unavailable", err)
	}
	if _, err := Launch(LaunchOptions{PodID: "p"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("missing binary: got %v", err)
	}
}

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, FrameStdin, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, FrameStdinClose, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, FrameResize, ResizePayload(80, 24)); err != nil {
		t.Fatal(err)
	}
	if kind, p, err := ReadFrame(&buf); err != nil || kind != FrameStdin || string(p) != "hello" {
		t.Fatalf("stdin frame: %d %q %v", kind, p, err)
	}
	if kind, p, err := ReadFrame(&buf); err != nil || kind != FrameStdinClose || len(p) != 0 {
		t.Fatalf("close frame: %d %q %v", kind, p, err)
	}
	kind, p, err := ReadFrame(&buf)
	if err != nil || kind != FrameResize || !bytes.Equal(p, []byte{0, 80, 0, 24}) {
		t.Fatalf("resize frame: %d %v %v; want width 80, height 24, big-endian", kind, p, err)
	}
	if _, _, err := ReadFrame(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("end between frames: %v, want EOF", err)
	}
}

func TestFramesRejectBadInput(t *testing.T) {
	if err := WriteFrame(io.Discard, FrameStdin, make([]byte, MaxFramePayload+1)); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("oversized write: %v", err)
	}
	huge := []byte{FrameStdout, 0xff, 0xff, 0xff, 0xff}
	if _, _, err := ReadFrame(bytes.NewReader(huge)); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("oversized read: %v", err)
	}
	truncated := []byte{FrameStdout, 0, 0, 0, 9, 'a'}
	if _, _, err := ReadFrame(bytes.NewReader(truncated)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want ErrUnexpectedEOF", err)
	}
}

// TestMonitorEnvDropsGOMAXPROCS: the daemon's own GOMAXPROCS never
// reaches a monitor (nor the runc it starts).
func TestMonitorEnvDropsGOMAXPROCS(t *testing.T) {
	got := monitorEnv([]string{"PATH=/bin", "GOMAXPROCS=8", "HOME=/root", "GOMAXPROCS="})
	want := []string{"PATH=/bin", "HOME=/root"}
	if !slices.Equal(got, want) {
		t.Errorf("monitorEnv = %q, want %q", got, want)
	}
}
