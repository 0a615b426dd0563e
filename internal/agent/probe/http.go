package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxRedirects is how many same-host redirects a probe or hook follows.
const maxRedirects = 10

// probeTransport carries HTTP probes: no proxy, no keep-alive (each probe is
// a fresh connection, like the kubelet's), no compression, and no TLS
// verification, since a pod's certificate cannot be checked against its IP.
var probeTransport = &http.Transport{
	Proxy:               nil,
	DialContext:         dialer().DialContext,
	TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // G402: a pod's certificate cannot be checked against its IP (the comment above)
	DisableKeepAlives:   true,
	DisableCompression:  true,
	TLSHandshakeTimeout: 10 * time.Second,
}

// sameHostRedirects follows redirects that stay on the original host name
// and stops, keeping the redirect response, at one that leaves it.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// newHTTPGet builds the GET request of an httpGet handler. purpose names the
// caller in the User-Agent: "probe" or "lifecycle".
func newHTTPGet(ctx context.Context, a *v1.HTTPGetAction, t Target, purpose string) (*http.Request, error) {
	host, err := t.host(a.Host)
	if err != nil {
		return nil, err
	}
	port, err := t.resolvePort(a.Port)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, handlerURL(a, host, port).String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = requestHeader(a.HTTPHeaders, purpose)
	req.Host = req.Header.Get("Host")
	return req, nil
}

// handlerURL joins scheme, host, port and path. A path that does not parse
// is passed along as a literal path rather than rejected.
func handlerURL(a *v1.HTTPGetAction, host string, port int) *url.URL {
	u, err := url.Parse(a.Path)
	if err != nil {
		u = &url.URL{Path: a.Path}
	}
	u.Scheme = strings.ToLower(string(a.Scheme))
	if u.Scheme == "" {
		u.Scheme = "http"
	}
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// requestHeader is the handler's headers plus the defaults a header of the
// same name overrides: User-Agent kube-<purpose>/<version> and Accept */* (an
// empty Accept removes the header).
func requestHeader(headers []v1.HTTPHeader, purpose string) http.Header {
	h := make(http.Header, len(headers)+2)
	for _, kv := range headers {
		h.Add(kv.Name, kv.Value)
	}
	if _, set := h["User-Agent"]; !set {
		h.Set("User-Agent", "kube-"+purpose+"/"+kubeVersion)
	}
	if _, set := h["Accept"]; !set {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	return h
}

// httpProbe succeeds on a 2xx or 3xx response. A 3xx means the probe stopped
// at a redirect to another host: success with a warning.
func httpProbe(ctx context.Context, a *v1.HTTPGetAction, t Target, timeout time.Duration) outcome {
	req, err := newHTTPGet(ctx, a, t, "probe")
	if err != nil {
		return unknown(err)
	}
	client := &http.Client{Transport: probeTransport, CheckRedirect: sameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		return failure(httpError(ctx, err, timeout))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if err != nil {
		// Like the kubelet, a response cut short gives no verdict.
		return unknown(fmt.Errorf("reading the response: %w", err))
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return success(string(body))
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		o := success("Probe stopped at a redirect to another host, response body: " + string(body))
		o.warning = true
		return o
	}
	// The body stays out of the message: it may hold anything the app chose
	// to print, and the message ends up in events.
	return failure(fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode))
}

// httpError words a transport error, naming a timeout as such.
func httpError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("%v (no response within %v)", err, timeout)
	}
	return err.Error()
}
