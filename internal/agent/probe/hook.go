package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// hookClient carries httpGet hooks: no proxy, no TLS verification, and only
// same-host redirects followed. It must never carry credentials of the
// agent's own, since the handler picks the host.
var hookClient = &http.Client{
	Transport: &http.Transport{
		Proxy:           nil,
		DialContext:     dialer().DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // G402: pod certificates cannot be checked against a pod IP, as for probes
	},
	CheckRedirect: sameHostRedirects,
}

// RunHook runs a postStart or preStop handler against t and waits for it;
// ctx bounds it (the caller passes the remaining grace period for preStop).
//
//   - exec runs the command through ex with no timeout of its own; a non-zero
//     exit is an error that carries the exit code and the output.
//   - httpGet fails only when no HTTP response arrives; the status code is not
//     checked, as in the kubelet. An https hook answered in plain HTTP is
//     retried over http, without any Authorization header.
//   - sleep waits sleep.seconds; ctx ending first is an error.
//   - tcpSocket is deprecated and unsupported as a lifecycle handler: an error,
//     as in the kubelet.
func RunHook(ctx context.Context, h *v1.LifecycleHandler, t Target, ex Execer) error {
	switch {
	case h == nil:
		return nil
	case h.Exec != nil:
		return execHook(ctx, h.Exec, t, ex)
	case h.HTTPGet != nil:
		return httpHook(ctx, h.HTTPGet, t)
	case h.Sleep != nil:
		return sleepHook(ctx, h.Sleep.Seconds, time.Second)
	case h.TCPSocket != nil:
		return errors.New("tcpSocket lifecycle hook: not supported (deprecated handler)")
	}
	return errors.New("lifecycle hook has no handler")
}

func execHook(ctx context.Context, a *v1.ExecAction, t Target, ex Execer) error {
	if ex == nil {
		return errors.New("exec lifecycle hook: no Execer")
	}
	stdout, stderr, code, err := ex.ExecSync(ctx, t.ContainerID, a.Command, 0)
	out := combinedOutput(stdout, stderr)
	if err != nil {
		return fmt.Errorf("exec lifecycle hook %q: %w (output %q)", a.Command, err, out)
	}
	if code != 0 {
		return fmt.Errorf("exec lifecycle hook %q: exit code %d, output %q", a.Command, code, out)
	}
	return nil
}

func httpHook(ctx context.Context, a *v1.HTTPGetAction, t Target) error {
	req, err := newHTTPGet(ctx, a, t, "lifecycle")
	if err != nil {
		return fmt.Errorf("httpGet lifecycle hook: %w", err)
	}
	err = getAndDiscard(req)
	if err != nil && req.URL.Scheme == "https" && answeredInPlainHTTP(err) {
		plain := req.Clone(ctx)
		plain.URL.Scheme = "http"
		plain.Header.Del("Authorization")
		err = getAndDiscard(plain)
	}
	if err != nil {
		return fmt.Errorf("httpGet lifecycle hook %s: %w", a.Path, err)
	}
	return nil
}

// getAndDiscard sends req and throws the response away.
func getAndDiscard(req *http.Request) error {
	resp, err := hookClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxOutput))
	return resp.Body.Close()
}

// answeredInPlainHTTP recognises Go's error for a TLS request that got an
// HTTP response.
func answeredInPlainHTTP(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr) && strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

// sleepHook waits secs units (a second but in tests).
func sleepHook(ctx context.Context, secs int64, unit time.Duration) error {
	if secs <= 0 {
		return nil
	}
	timer := time.NewTimer(time.Duration(secs) * unit)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sleep lifecycle hook (%ds): ended early: %w", secs, context.Cause(ctx))
	}
}
