package registry

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth-dev/berth/test/testimage"
)

func TestPlainRegistryCountsBlobGets(t *testing.T) {
	r := StartT(t, Options{})
	p, err := r.PushImage("test/busybox:v1", testimage.Options{Layers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Layers) != 3 || !strings.HasPrefix(p.Ref, r.Host+"/") {
		t.Fatalf("pushed %+v, want 3 layers under %s", p, r.Host)
	}
	before, err := r.BlobGets()
	if err != nil {
		t.Fatal(err)
	}
	fetchLayers(t, r, p.Ref)
	fetchLayers(t, r, p.Ref)
	after, err := r.BlobGets()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Layers {
		if got := after[l] - before[l]; got != 2 {
			t.Errorf("layer %s: %d GETs in the log after two fetches, want 2", l, got)
		}
	}
	pid := r.PID()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil && r.Running() {
		t.Errorf("registry pid %d still running after Stop", pid)
	}
}

func TestAuthRegistryRefusesAnonymous(t *testing.T) {
	r := StartT(t, Options{Username: "tester", Password: "s3cret"})
	if status := getV2(t, http.DefaultClient, r.URL, "", ""); status != http.StatusUnauthorized {
		t.Errorf("anonymous GET /v2/: %d, want 401", status)
	}
	if status := getV2(t, http.DefaultClient, r.URL, "tester", "wrong"); status != http.StatusUnauthorized {
		t.Errorf("GET /v2/ with a wrong password: %d, want 401", status)
	}
	if status := getV2(t, http.DefaultClient, r.URL, "tester", "s3cret"); status != http.StatusOK {
		t.Errorf("GET /v2/ with the password: %d, want 200", status)
	}
	if _, err := r.PushDockerImage("test/docker:v1", testimage.Options{}); err != nil {
		t.Fatalf("push with credentials: %v", err)
	}
}

func TestTLSRegistryNeedsItsCA(t *testing.T) {
	r := StartT(t, Options{TLS: true})
	if !strings.HasPrefix(r.URL, "https://") || r.CAFile == "" {
		t.Fatalf("TLS registry URL %s CA %q", r.URL, r.CAFile)
	}
	if _, err := http.Get(r.URL + "/v2/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET without the test CA: %v, want a certificate error", err)
	}
	client, err := r.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	if status := getV2(t, client, r.URL, "", ""); status != http.StatusOK {
		t.Errorf("GET /v2/ trusting the CA: %d", status)
	}
	m, err := r.PushMultiArch("test/multi:v1", testimage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Host.ID == m.Other.ID || len(m.Other.Layers) != len(m.Host.Layers)+1 {
		t.Errorf("multi-arch: host %+v other %+v", m.Host, m.Other)
	}
	opts, _ := r.remoteOptions()
	ref, _ := name.ParseReference(m.Ref)
	idx, err := remote.Index(ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 || im.Manifests[1].Platform.Architecture != runtime.GOARCH ||
		im.Manifests[1].Digest.String() != m.Host.Digest {
		t.Errorf("index manifests %+v, want the host's image %s second", im.Manifests, m.Host.Digest)
	}
}

func TestSharingLayers(t *testing.T) {
	r := StartT(t, Options{})
	a, b, shared, err := r.PushSharingLayers("test/a:v1", "test/b:v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(shared) != 4 || len(b.Layers) != 5 || a.ID == b.ID {
		t.Errorf("a %+v b %+v shared %v: want 4 shared layers, b with 5", a, b, shared)
	}
}

func fetchLayers(t *testing.T, r *Registry, refStr string) {
	t.Helper()
	opts, err := r.remoteOptions()
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(refStr)
	img, err := remote.Image(ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func getV2(t *testing.T, c *http.Client, url, user, password string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v2/", nil)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s/v2/: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
