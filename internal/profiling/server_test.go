package profiling

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServesProfilesOnARootOnlySocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pprof.sock")
	s, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	defer s.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi, err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	for p, want := range map[string]string{"mutex": "--- mutex:", "block": "--- contention:", "goroutine": "goroutine profile:"} {
		resp, err := client.Get("http://berth/debug/pprof/" + p + "?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %.80q", p, resp.StatusCode, body)
		}
	}
}
