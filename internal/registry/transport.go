package registry

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Network timeouts of every registry connection. A body that stops
// arriving is the download's stall watchdog's business (internal/image).
const (
	dialTimeout           = 30 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 30 * time.Second
)

// transports keeps one *http.Transport per TLS setting, so connections to
// a registry are reused across pulls.
type transports struct {
	mu    sync.Mutex
	byKey map[string]*http.Transport
}

// forEndpoint returns the round tripper for ep: its TLS settings, and
// requests to ep's host sent with ep's scheme and API path.
func (t *transports) forEndpoint(ep Endpoint) (http.RoundTripper, error) {
	base, err := t.base(ep)
	if err != nil {
		return nil, err
	}
	return &endpointTransport{ep: ep, base: base}, nil
}

func (t *transports) base(ep Endpoint) (*http.Transport, error) {
	key := fmt.Sprintf("%t|%s", ep.SkipVerify, strings.Join(ep.CAFiles, "|"))
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.byKey[key]; ok {
		return tr, nil
	}
	tlsConfig, err := tlsConfigFor(ep)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	tr.MaxIdleConnsPerHost = 16
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = tlsHandshakeTimeout
	tr.ResponseHeaderTimeout = responseHeaderTimeout
	if t.byKey == nil {
		t.byKey = map[string]*http.Transport{}
	}
	t.byKey[key] = tr
	return tr, nil
}

func tlsConfigFor(ep Endpoint) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: ep.SkipVerify} //nolint:gosec // G402: only when hosts.toml sets skip_verify for this host
	if len(ep.CAFiles) == 0 {
		return cfg, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, path := range ep.CAFiles {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("registry %s: ca %s: %w: %w", ep.Host, path, err, errdefs.ErrInvalidArgument)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry %s: ca %s: no PEM certificate: %w", ep.Host, path, errdefs.ErrInvalidArgument)
		}
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// endpointTransport sends requests for the endpoint's host with its scheme
// and maps the "/v2" API root onto its configured path; the body of a
// manifest response is bounded to maxManifestSize. Requests to other hosts
// (token servers, blob redirects) pass unchanged.
type endpointTransport struct {
	ep   Endpoint
	base http.RoundTripper
}

func (t *endpointTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.ep.Host {
		return t.base.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	out.URL.Scheme = t.ep.Scheme
	if rest, ok := strings.CutPrefix(out.URL.Path, "/v2"); ok && (rest == "" || rest[0] == '/') && t.ep.APIPath != "/v2" {
		out.URL.Path = t.ep.APIPath + rest
		out.URL.RawPath = ""
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil || out.Method != http.MethodGet || !strings.Contains(out.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > maxManifestSize {
		resp.Body.Close()
		return nil, fmt.Errorf("manifest: Content-Length %d: larger than %d bytes: %w", resp.ContentLength, maxManifestSize, errdefs.ErrUnavailable)
	}
	resp.Body = &boundedBody{rc: resp.Body, left: maxManifestSize}
	return resp, nil
}

// boundedBody fails the read that goes past left bytes.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("manifest: larger than %d bytes: %w", maxManifestSize, errdefs.ErrUnavailable)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
