package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// Containers is what the streaming server needs of containers.
type Containers interface {
	Exec(ctx context.Context, id string, cmd []string, st pod.ExecStreams) (int, error)
	Attach(ctx context.Context, id string, st pod.ExecStreams) error
}

// Sandboxes is what port forwarding needs of pod sandboxes.
type Sandboxes interface {
	Sandbox(id string) (pod.Sandbox, error)
}

// Dialer connects to addr inside a network namespace.
type Dialer func(ctx context.Context, netnsPath, network, addr string) (net.Conn, error)

// Config wires a Server.
type Config struct {
	Address    string // host:port to listen on; port 0 picks one
	Containers Containers
	Sandboxes  Sandboxes
	Dial       Dialer
	Logger     *slog.Logger // optional; nil discards
}

// Server serves exec, attach and port-forward streams.
type Server struct {
	lib      streaming.Server
	router   *router
	listener net.Listener
	http     *http.Server
}

// Listen binds the address and prepares the server; Serve runs it.
func Listen(cfg Config) (*Server, error) {
	if cfg.Containers == nil || cfg.Sandboxes == nil || cfg.Dial == nil {
		return nil, fmt.Errorf("stream server: containers, sandboxes and dialer are required: %w", errdefs.ErrInvalidArgument)
	}
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("stream server %s: %w", cfg.Address, err)
	}
	libCfg := streaming.DefaultConfig
	libCfg.Addr = l.Addr().String()
	libCfg.BaseURL = &url.URL{Scheme: "http", Host: libCfg.Addr}
	rt := &runtime{cfg: cfg}
	lib, err := streaming.NewServer(libCfg, rt)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("stream server %s: %w", cfg.Address, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	front := &router{lib: lib, rt: rt, tokens: newTokenCache(), idle: libCfg.StreamIdleTimeout, log: log}
	return &Server{
		lib: lib, router: front, listener: l,
		http: &http.Server{Handler: front, ReadHeaderTimeout: 30 * time.Second},
	}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Serve answers requests until Close.
func (s *Server) Serve() error {
	err := s.http.Serve(s.listener)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops listening and ends the open streams that berth serves
// itself; SPDY and older WebSocket streams end with their clients.
func (s *Server) Close() error {
	s.router.sessions.closeAll()
	return s.http.Close()
}

// GetExec returns the URL of an exec stream.
func (s *Server) GetExec(req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := s.lib.GetExec(req)
	if err != nil {
		return nil, err
	}
	if err := s.router.remember(resp.GetUrl(), execRequest(req)); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetAttach returns the URL of an attach stream.
func (s *Server) GetAttach(req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := s.lib.GetAttach(req)
	if err != nil {
		return nil, err
	}
	if err := s.router.remember(resp.GetUrl(), attachRequest(req)); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetPortForward returns the URL of a port-forward stream.
func (s *Server) GetPortForward(req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return s.lib.GetPortForward(req)
}

// loopback is where port forwarding connects inside the pod.
func loopback(port int32) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
}
