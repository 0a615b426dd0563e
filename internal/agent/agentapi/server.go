package agentapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/unixsock"
)

// PodService is what the API serves; *Agent implements it.
type PodService interface {
	Apply(ctx context.Context, req ApplyRequest) (ApplyResponse, error)
	Unwatch(ctx context.Context, dir string) (DeleteResponse, error)
	Delete(ctx context.Context, namespace, name string, grace *int64) (DeleteResponse, error)
	// UpdateEphemeralContainers replaces a running pod's list of
	// ephemeral containers (adding to it only) and returns the pod.
	UpdateEphemeralContainers(ctx context.Context, namespace, name string, list []v1.EphemeralContainer) (v1.Pod, error)
	ListPods(namespace string) v1.PodList
	DescribePod(namespace, name string) (PodDetail, error)
	// ListEvents returns the events of the pods of namespace (every
	// namespace when it is empty).
	ListEvents(namespace string) EventList
	// Node returns the node with its conditions and events.
	Node() NodeDetail
	// Pulls are the image pulls of the pods of namespace (every
	// namespace when it is empty).
	Pulls(namespace string) PullList
	// Ready refuses reads while the pods are being recovered (a list
	// would lack them) and once the service is stopping.
	Ready() error
	WorkloadService
}

// maxRequestBytes bounds a request body (a bundle of manifests).
const maxRequestBytes = 16 << 20

// APIServer serves PodService on a unix socket.
type APIServer struct {
	svc  PodService
	log  *slog.Logger
	http *http.Server
	lis  net.Listener
}

// ListenAPI opens the API socket at path (mode 0600, replacing a stale
// one).
func ListenAPI(path string, svc PodService, log *slog.Logger) (*APIServer, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("agent socket %s: remove stale: %w", path, err)
	}
	lis, err := unixsock.Listen(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	s := &APIServer{svc: svc, log: log, lis: lis}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathApply, s.apply)
	mux.HandleFunc("POST "+pathUnwatch, s.unwatch)
	mux.HandleFunc("GET "+pathPods, s.list)
	mux.HandleFunc("GET "+pathPods+"/{namespace}/{name}", s.describe)
	mux.HandleFunc("DELETE "+pathPods+"/{namespace}/{name}", s.delete)
	mux.HandleFunc("PUT "+pathPods+"/{namespace}/{name}/ephemeralcontainers", s.ephemeral)
	mux.HandleFunc("GET "+pathEvents, s.events)
	mux.HandleFunc("GET "+pathNode, s.node)
	mux.HandleFunc("GET "+pathPulls, s.pulls)
	s.routeWorkloads(mux)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Serve answers requests until Close.
func (s *APIServer) Serve() error {
	err := s.http.Serve(s.lis)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server, letting requests in flight finish for a moment,
// and removes the socket.
func (s *APIServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
	os.Remove(s.lis.Addr().String())
}

func (s *APIServer) apply(w http.ResponseWriter, r *http.Request) {
	var req ApplyRequest
	if !decodeBody(w, r, &req) {
		return
	}
	resp, err := s.svc.Apply(r.Context(), req)
	s.answer(w, r, resp, err)
}

func (s *APIServer) unwatch(w http.ResponseWriter, r *http.Request) {
	var req UnwatchRequest
	if !decodeBody(w, r, &req) {
		return
	}
	resp, err := s.svc.Unwatch(r.Context(), req.Dir)
	s.answer(w, r, resp, err)
}

func (s *APIServer) ephemeral(w http.ResponseWriter, r *http.Request) {
	var req EphemeralContainersRequest
	if !decodeBody(w, r, &req) {
		return
	}
	pod, err := s.svc.UpdateEphemeralContainers(r.Context(), r.PathValue("namespace"), r.PathValue("name"), req.EphemeralContainers)
	s.answer(w, r, pod, err)
}

func (s *APIServer) list(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	s.answer(w, r, s.svc.ListPods(r.URL.Query().Get("namespace")), nil)
}

func (s *APIServer) events(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	s.answer(w, r, s.svc.ListEvents(r.URL.Query().Get("namespace")), nil)
}

func (s *APIServer) describe(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	detail, err := s.svc.DescribePod(r.PathValue("namespace"), r.PathValue("name"))
	s.answer(w, r, detail, err)
}

func (s *APIServer) pulls(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	s.answer(w, r, s.svc.Pulls(r.URL.Query().Get("namespace")), nil)
}

func (s *APIServer) node(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	s.answer(w, r, s.svc.Node(), nil)
}

func (s *APIServer) delete(w http.ResponseWriter, r *http.Request) {
	grace, ok := graceParam(w, r)
	if !ok {
		return
	}
	resp, err := s.svc.Delete(r.Context(), r.PathValue("namespace"), r.PathValue("name"), grace)
	s.answer(w, r, resp, err)
}

// decodeBody reads a JSON request body, refusing unknown fields.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	return true
}

// answer writes v as JSON, or err with the status its class maps to.
func (s *APIServer) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		code := statusOf(err)
		if code == http.StatusInternalServerError {
			s.log.Error("agent API", "method", r.Method, "path", r.URL.Path, "error", err)
		}
		writeError(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log.Debug("agent API: write answer", "path", r.URL.Path, "error", err)
	}
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, errdefs.ErrInvalidArgument):
		return http.StatusBadRequest
	case errors.Is(err, errdefs.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errdefs.ErrFailedPrecondition), errors.Is(err, errdefs.ErrAlreadyExists):
		return http.StatusConflict
	case errors.Is(err, errdefs.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Error: strings.TrimSpace(msg)}) // fails only when the client went away
}
