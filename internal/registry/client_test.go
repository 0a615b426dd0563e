package registry

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// serveRegistry runs an in-memory registry behind wrap and returns its host.
func serveRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestResolveMovesOnFromHungEndpoint(t *testing.T) {
	saved := endpointTimeout
	endpointTimeout = 300 * time.Millisecond
	t.Cleanup(func() { endpointTimeout = saved })
	hung := serveRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") {
				<-r.Context().Done() // never answers
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	upstream := serveRegistry(t, nil)
	img, err := random.Image(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(upstream + "/app:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeHostsFile(t, dir, upstream, fmt.Sprintf("server = %q\n[host.%q]\n", "http://"+upstream, "http://"+hung))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	res, err := New(dir).Resolve(ctx, ref, Options{OS: "linux", Arch: "amd64"})
	if err != nil {
		t.Fatalf("resolve with a hung mirror: %v", err)
	}
	if res.Endpoint != "http://"+upstream+"/v2" {
		t.Errorf("resolved on %s, want the upstream", res.Endpoint)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("resolve took %s", d)
	}
}
