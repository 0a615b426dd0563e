package monitor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/monitor"
)

// rawCall sends raw bytes as a request and returns the response line.
func rawCall(t *testing.T, socket string, raw string) monitor.Response {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = conn.Write([]byte(raw)) }() // the monitor may answer (and hang up) before it read all
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("request %.60q: no response: %v", raw, err)
	}
	var resp monitor.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("request %.60q: response %q: %v", raw, line, err)
	}
	return resp
}

// TestBadRequestsGetErrors: whatever a request holds, the monitor answers
// it with an error of the right class and goes on serving.
func TestBadRequestsGetErrors(t *testing.T) {
	e := newEnv(t)
	e.launch(t)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, c := range []struct{ raw, class string }{
		{"not json\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"list\"\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"list\"} trailing\n", "invalid_argument"},
		{"[1,2,3]\n", "invalid_argument"},
		{"{\"version\":" + deep + "}\n", "invalid_argument"},
		{"{\"version\":\"1\",\"op\":\"list\"}\n", "invalid_argument"},
		{"{\"version\":1.5,\"op\":\"list\"}\n", "invalid_argument"},
		{"{\"version\":1e400,\"op\":\"list\"}\n", "invalid_argument"},
		{"{\"version\":2,\"op\":\"list\"}\n", "failed_precondition"},
		{"{\"version\":1,\"op\":\"frobnicate\"}\n", "not_implemented"},
		{"{\"version\":1,\"op\":\"create\"}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":null}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":{\"id\":\"a\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":{\"id\":\"../x\",\"bundle\":\"/b\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":{\"id\":\"a\\u0000b\",\"bundle\":\"/b\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":{\"id\":7,\"bundle\":\"/b\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"create\",\"create\":{\"id\":\"a\",\"bundle\":\"/b\",\"terminal\":\"yes\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"adopt\",\"adopt\":{\"id\":\"a\",\"pid\":\"12\"}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"adopt\",\"adopt\":{\"id\":\"a\",\"pid\":-1}}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"attach\",\"id\":\"a\"}\n", "invalid_argument"},
		{"{\"version\":1,\"op\":\"attach\",\"id\":\"a\",\"attach\":{}}\n", "not_found"},
		{"{\"version\":1,\"op\":\"start\",\"id\":\"nope\"}\n", "not_found"},
		{"{\"version\":1,\"op\":\"reopen-log\",\"id\":\"nope\"}\n", "not_found"},
		{"{\"version\":1,\"op\":\"list\",\"id\":\"\xff\xfe\"}\n", ""},
		{"{\"version\":1,\"op\":\"list\",\"id\":\"\\ud800\"}\n", ""},
	} {
		resp := rawCall(t, e.socket, c.raw)
		if c.class == "" {
			if resp.Error != "" {
				t.Errorf("request %.60q: %v, want success", c.raw, resp.Err())
			}
			continue
		}
		if resp.Error == "" || resp.ErrorClass != c.class {
			t.Errorf("request %.60q: error %q class %q, want class %s", c.raw, resp.Error, resp.ErrorClass, c.class)
		}
	}
	// A request line over 1 MiB is refused, not buffered without end.
	huge := "{\"version\":1,\"op\":\"list\",\"id\":\"" + strings.Repeat("x", 2<<20) + "\"}\n"
	if resp := rawCall(t, e.socket, huge); resp.ErrorClass != "invalid_argument" {
		t.Errorf("a 2 MiB request: %q, want invalid_argument", resp.Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.client.Ping(ctx); err != nil {
		t.Fatalf("monitor after bad requests: %v", err)
	}
}
