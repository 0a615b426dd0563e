package stream

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
)

// The kinds of stream berth serves over WebSocket v5 itself; they are also
// the first element of the library's URL paths.
const (
	kindExec   = "exec"
	kindAttach = "attach"
)

// Limits of the token cache, the same as the library's own so that a token
// lives as long in both.
const (
	tokenTTL  = time.Minute
	maxTokens = 1000
)

// streamRequest is what berth remembers of an exec or attach request.
type streamRequest struct {
	kind        string
	containerID string
	cmd         []string
	stdin       bool
	stdout      bool
	stderr      bool
	tty         bool
}

func execRequest(req *runtimeapi.ExecRequest) streamRequest {
	return streamRequest{
		kind: kindExec, containerID: req.GetContainerId(), cmd: req.GetCmd(),
		stdin: req.GetStdin(), stdout: req.GetStdout(), stderr: req.GetStderr(), tty: req.GetTty(),
	}
}

func attachRequest(req *runtimeapi.AttachRequest) streamRequest {
	return streamRequest{
		kind: kindAttach, containerID: req.GetContainerId(),
		stdin: req.GetStdin(), stdout: req.GetStdout(), stderr: req.GetStderr(), tty: req.GetTty(),
	}
}

// streamPath splits an exec or attach URL path into its kind and token.
// It ignores empty and dot elements, so that every spelling of the path
// that could reach the library's route for a token is recognised.
func streamPath(p string) (kind, token string, ok bool) {
	parts := strings.FieldsFunc(path.Clean("/"+p), func(r rune) bool { return r == '/' })
	if len(parts) != 2 || (parts[0] != kindExec && parts[0] != kindAttach) {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// tokenCache maps the library's one-time tokens to the exec and attach
// requests behind them. Entries are single use, expire after ttl, and at
// most max are held.
type tokenCache struct {
	mu      sync.Mutex
	now     func() time.Time
	ttl     time.Duration
	max     int
	entries map[string]tokenEntry
}

type tokenEntry struct {
	req     streamRequest
	expires time.Time
}

func newTokenCache() *tokenCache {
	return &tokenCache{now: time.Now, ttl: tokenTTL, max: maxTokens, entries: map[string]tokenEntry{}}
}

// put remembers req under token; it fails when the cache is full.
func (c *tokenCache) put(token string, req streamRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for t, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, t)
		}
	}
	if len(c.entries) >= c.max {
		return streaming.NewErrorTooManyInFlight()
	}
	c.entries[token] = tokenEntry{req: req, expires: now.Add(c.ttl)}
	return nil
}

// take removes token and returns its request, if it is known and alive.
func (c *tokenCache) take(token string) (streamRequest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[token]
	if !ok {
		return streamRequest{}, false
	}
	delete(c.entries, token)
	if !c.now().Before(e.expires) {
		return streamRequest{}, false
	}
	return e.req, true
}

// tokenOf returns the kind and token of a URL the library handed out.
func tokenOf(rawURL string) (kind, token string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", fmt.Errorf("stream URL %q: %w", rawURL, err)
	}
	kind, token, ok := streamPath(u.Path)
	if !ok {
		return "", "", fmt.Errorf("stream URL %q: not an exec or attach URL", rawURL)
	}
	return kind, token, nil
}
