package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server serves /metrics over plain HTTP.
type Server struct {
	lis  net.Listener
	http *http.Server
}

// Listen opens addr (host:port) for the metrics endpoint; Serve starts
// answering.
func Listen(addr string, m *Metrics) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &Server{lis: lis, http: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the address the server listens on (with the chosen port when the
// configured one was 0).
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Serve answers requests until Close; it returns nil after Close.
func (s *Server) Serve() error {
	if err := s.http.Serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics server: %w", err)
	}
	return nil
}

// Close stops the server, letting scrapes in flight finish for up to 5 s.
// It also closes the listener when Serve was never called.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = s.http.Close()
	}
	if cerr := s.lis.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
		err = fmt.Errorf("metrics listener: %w", cerr)
	}
	return err
}
