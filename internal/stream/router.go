package stream

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// router sits in front of the streaming library's handler. It serves the
// exec and attach requests that ask for WebSocket protocol v5 itself and
// passes everything else (SPDY, the older WebSocket protocols, port
// forwarding) to the library unchanged.
//
// Every exec and attach token the library hands out is also in tokens, and
// the router takes it from there whichever protocol the request speaks, so
// a token is good for one stream whether berth or the library serves it.
type router struct {
	lib      http.Handler
	rt       *runtime
	tokens   *tokenCache
	idle     time.Duration
	log      *slog.Logger
	sessions sessions
}

func (h *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, token, ok := streamPath(r.URL.Path)
	if !ok {
		h.lib.ServeHTTP(w, r)
		return
	}
	req, found := h.tokens.take(token)
	if !wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		if !found {
			http.NotFound(w, r)
			return
		}
		h.lib.ServeHTTP(w, r)
		return
	}
	h.burn(kind, token)
	if !found || req.kind != kind {
		http.NotFound(w, r)
		return
	}
	h.serveV5(w, r, req)
}

// remember records the request behind a URL the library handed out. When
// berth cannot hold it, the library's token is dropped too.
func (h *router) remember(rawURL string, req streamRequest) error {
	kind, token, err := tokenOf(rawURL)
	if err != nil {
		return err
	}
	if err := h.tokens.put(token, req); err != nil {
		h.burn(kind, token)
		return err
	}
	return nil
}

// burn makes the library consume its copy of a token that berth answers
// itself, so that the token cannot be used again through the library and
// stops counting against the library's limit at once. The library takes
// the token as it routes the request; a plain GET without protocol and
// upgrade headers is then refused before any stream opens or anything
// runs.
func (h *router) burn(kind, token string) {
	r, err := http.NewRequest(http.MethodGet, "/"+kind+"/"+token, nil) //nolint:gosec // G704: never sent; the router only matches its path
	if err != nil {
		return // the token then expires in the library
	}
	h.lib.ServeHTTP(&discardResponse{header: http.Header{}}, r)
}

// discardResponse is a ResponseWriter that forgets what it is told.
type discardResponse struct{ header http.Header }

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}

// sessions tracks the WebSocket v5 streams berth serves, which the HTTP
// server forgets once they are hijacked, so that Close can end them.
type sessions struct {
	mu     sync.Mutex
	closed bool
	next   int
	cancel map[int]context.CancelFunc
}

// add tracks a session ended by cancel and returns its removal; after
// closeAll, cancel runs at once.
func (s *sessions) add(cancel context.CancelFunc) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel()
		return func() {}
	}
	if s.cancel == nil {
		s.cancel = map[int]context.CancelFunc{}
	}
	id := s.next
	s.next++
	s.cancel[id] = cancel
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.cancel, id)
	}
}

// closeAll ends every session, present and future.
func (s *sessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, cancel := range s.cancel {
		cancel()
		delete(s.cancel, id)
	}
}
