package image

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// basicOnly makes reg answer anonymous requests with a Basic challenge
// unless open is set for the path, and records every Basic credential seen.
func basicOnly(reg *testRegistry, user, pass string, open func(path string) bool) func() []string {
	var mu sync.Mutex
	var seen []string
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if ok {
				mu.Lock()
				seen = append(seen, u+":"+p)
				mu.Unlock()
			}
			if (ok && u == user && p == pass) || (!ok && open != nil && open(r.URL.Path)) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
		})
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestPullCredentialsNotSentToMirror(t *testing.T) {
	mirror, upstream := newTestRegistry(t), newTestRegistry(t)
	img := hostImage(t, 1)
	mirror.push(t, "lib/app", "1", img)
	upstream.push(t, "lib/app", "1", img)
	// The mirror challenges the ping (so a client with credentials would
	// send them) but serves content anonymously.
	mirrorSaw := basicOnly(mirror, "nobody", "-", func(path string) bool { return path != "/v2/" })
	upstreamSaw := basicOnly(upstream, "alice", "secret", nil)
	s, hosts := newPullStore(t, PullConfig{})
	writeHosts(t, hosts, upstream.host, fmt.Sprintf("server = %q\n[host.%q]\n", "http://"+upstream.host, "http://"+mirror.host))

	got, err := pull(t, s, upstream.host+"/lib/app:1", PullOptions{Auth: &Auth{Username: "alice", Password: "secret"}})
	if err != nil || got.ID != imageID(t, img) {
		t.Fatalf("pull through the mirror: %v", err)
	}
	if seen := mirrorSaw(); len(seen) != 0 {
		t.Errorf("mirror received credentials %v", seen)
	}
	if seen := upstreamSaw(); len(seen) != 0 {
		t.Errorf("upstream contacted (%v) although the mirror has the image", seen)
	}
	// The mirror down: the upstream gets the credentials.
	mirror.srv.Close()
	s2, _ := newPullStore(t, PullConfig{HostsDir: hosts})
	if _, err := pull(t, s2, upstream.host+"/lib/app:1", PullOptions{Auth: &Auth{Username: "alice", Password: "secret"}}); err != nil {
		t.Fatalf("upstream with credentials: %v", err)
	}
}

func TestPullCredentialsBoundToServerAddress(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "private/app", "1", img)
	saw := basicOnly(reg, "alice", "secret", nil)
	s, _ := newPullStore(t, PullConfig{})

	other := &Auth{Username: "alice", Password: "secret", ServerAddress: "https://registry.invalid/v1/"}
	if _, err := pull(t, s, ref, PullOptions{Auth: other}); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("credentials for another server: err = %v, want FailedPrecondition", err)
	}
	if seen := saw(); len(seen) != 0 {
		t.Errorf("credentials bound to another server were sent: %v", seen)
	}
	for _, addr := range []string{reg.host, "http://" + reg.host + "/v2/"} {
		mine := &Auth{Username: "alice", Password: "secret", ServerAddress: addr}
		if got, err := pull(t, s, ref, PullOptions{Auth: mine}); err != nil || got.ID != imageID(t, img) {
			t.Errorf("server address %q: %v", addr, err)
		}
	}
}

func TestLayerFlightsNotSharedAcrossCredentials(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "shared", "1", img)
	layer := layerDigests(t, img)[0]
	var mu sync.Mutex
	auths := map[string]bool{}
	both := make(chan struct{})
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/blobs/"+layer) {
				u, _, _ := r.BasicAuth()
				mu.Lock()
				auths[u] = true
				if len(auths) == 2 {
					close(both)
				}
				mu.Unlock()
				select { // hold the first download until the other pull asked too
				case <-both:
				case <-time.After(2 * time.Second):
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	s, _ := newPullStore(t, PullConfig{})
	var wg sync.WaitGroup
	for _, user := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pull(t, s, ref, PullOptions{Auth: &Auth{Username: user, Password: "pw"}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := reg.gets(layer); n != 2 {
		t.Errorf("layer fetched %d times for two pulls with different credentials, want 2 (one each)", n)
	}
}
