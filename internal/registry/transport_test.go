package registry

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestBaseTransportHasTimeouts(t *testing.T) {
	var ts transports
	tr, err := ts.base(Endpoint{Scheme: "https", Host: "reg.example"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.ResponseHeaderTimeout != 30*time.Second || tr.TLSHandshakeTimeout != 10*time.Second || tr.DialContext == nil {
		t.Errorf("response header timeout %s, TLS handshake timeout %s, dialer set %t", tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout, tr.DialContext != nil)
	}
}

// countingBody is a body of 3*maxManifestSize spaces that counts what was
// read.
type countingBody struct{ n int64 }

func (b *countingBody) Read(p []byte) (int, error) {
	left := 3*maxManifestSize - b.n
	if left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), left)]
	for i := range p {
		p[i] = ' '
	}
	b.n += int64(len(p))
	return len(p), nil
}
func (b *countingBody) Close() error { return nil }

type fixedResponse struct {
	body          io.ReadCloser
	contentLength int64
}

func (f fixedResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: f.body, ContentLength: f.contentLength, Header: http.Header{}, Request: req}, nil
}

func TestManifestBodyIsBounded(t *testing.T) {
	ep := Endpoint{Scheme: "http", Host: "reg.example", APIPath: "/v2"}
	get := func(rt http.RoundTripper, path string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://reg.example"+path, nil)
		return (&endpointTransport{ep: ep, base: rt}).RoundTrip(req)
	}
	// Declared too large: refused before reading.
	body := &countingBody{}
	if _, err := get(fixedResponse{body: body, contentLength: maxManifestSize + 1}, "/v2/app/manifests/1"); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Content-Length over the limit: err = %v, want Unavailable", err)
	}
	if body.n != 0 {
		t.Errorf("%d bytes read of a manifest declared too large", body.n)
	}
	// Length not declared: reading stops just past the limit.
	body = &countingBody{}
	resp, err := get(fixedResponse{body: body, contentLength: -1}, "/v2/app/manifests/1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized manifest: err = %v, want Unavailable saying it is too large", err)
	}
	if body.n > maxManifestSize+64<<10 {
		t.Errorf("%d bytes read of an oversized manifest", body.n)
	}
	// Blobs are not bounded here.
	body = &countingBody{}
	resp, err = get(fixedResponse{body: body, contentLength: -1}, "/v2/app/blobs/sha256:00")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.CopyN(io.Discard, resp.Body, 2*maxManifestSize); err != nil || n != 2*maxManifestSize {
		t.Errorf("blob body: read %d: %v", n, err)
	}
}
