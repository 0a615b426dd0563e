package profiling

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/berth-dev/berth/internal/unixsock"
)

const (
	// mutexFraction samples one in this many mutex contention events.
	mutexFraction = 5
	// blockRate samples blocking events of at least this many nanoseconds.
	blockRate = 100_000
)

// Server serves the profiles on a unix socket.
type Server struct {
	lis  net.Listener
	http *http.Server
}

// Listen binds the socket at path (mode 0600) and turns on the mutex and
// block profiles' sampling.
func Listen(path string) (*Server, error) {
	lis, err := unixsock.Listen(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pprof socket %s: %w", path, err)
	}
	runtime.SetMutexProfileFraction(mutexFraction)
	runtime.SetBlockProfileRate(blockRate)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &Server{lis: lis, http: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Serve answers requests until Close; it returns nil after Close.
func (s *Server) Serve() error {
	if err := s.http.Serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("pprof server: %w", err)
	}
	return nil
}

// Close stops the server and the sampling it turned on.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	runtime.SetMutexProfileFraction(0)
	runtime.SetBlockProfileRate(0)
	return err
}
