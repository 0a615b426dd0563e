package registry

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/berth-dev/berth/internal/errdefs"
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
	if t.byKey == nil {
		t.byKey = map[string]*http.Transport{}
	}
	t.byKey[key] = tr
	return tr, nil
}

func tlsConfigFor(ep Endpoint) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: ep.SkipVerify} //nolint:gosec // configured per registry
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
// and maps the "/v2" API root onto its configured path. Requests to other
// hosts (token servers, blob redirects) pass unchanged.
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
	return t.base.RoundTrip(out)
}
