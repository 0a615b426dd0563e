package monitord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/runc"
	"github.com/berth-dev/berth/internal/unixsock"
)

const (
	maxRequestSize = 1 << 20
	ioTimeout      = 10 * time.Second
	opTimeout      = 2 * time.Minute
)

// Config is how one monitor runs.
type Config struct {
	Pod      string
	Socket   string
	ExitDir  string
	RuncPath string
	RuncRoot string
	Log      *log.Logger // diagnostics; discarded when nil
}

// Server is one pod's monitor.
type Server struct {
	cfg        Config
	log        *log.Logger
	reaper     *Reaper
	oomWatch   *oomWatcher
	runc       *runc.Runc
	mu         sync.Mutex
	containers map[string]*container
	creating   map[string]bool
	shutdown   chan struct{}
	stopOnce   sync.Once
}

// Run makes the process a child subreaper, listens on cfg.Socket, writes
// monitor.ReadyMessage to ready (and closes it) once listening, and serves
// until Shutdown or SIGTERM/SIGINT.
func Run(cfg Config, ready io.WriteCloser) error {
	if cfg.Pod == "" || cfg.Socket == "" || cfg.ExitDir == "" {
		return fmt.Errorf("monitor: pod, socket and exit dir are required: %w", errdefs.ErrInvalidArgument)
	}
	s := newServer(cfg)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("monitor %s: child subreaper: %w", cfg.Pod, err)
	}
	signal.Ignore(unix.SIGHUP, unix.SIGPIPE)
	if err := os.MkdirAll(cfg.ExitDir, 0o700); err != nil {
		return fmt.Errorf("monitor %s: exit dir: %w", cfg.Pod, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.reaper.Run(ctx)

	l, err := listen(cfg.Socket)
	if err != nil {
		return fmt.Errorf("monitor %s: %w", cfg.Pod, err)
	}
	defer os.Remove(cfg.Socket)
	defer l.Close()
	if ready != nil {
		_, _ = io.WriteString(ready, monitor.ReadyMessage) // the launcher may be gone
		ready.Close()
	}
	s.log.Printf("pod %s: listening on %s", cfg.Pod, cfg.Socket)
	go s.acceptLoop(l)
	s.waitForStop()
	s.log.Printf("pod %s: exiting with %d container(s) running", cfg.Pod, s.running())
	return nil
}

func newServer(cfg Config) *Server {
	logger := cfg.Log
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	s := &Server{
		cfg:        cfg,
		log:        logger,
		reaper:     NewReaper(),
		oomWatch:   newOOMWatcher(logger, cfg.Pod),
		containers: map[string]*container{},
		creating:   map[string]bool{},
		shutdown:   make(chan struct{}),
	}
	s.runc = &runc.Runc{Path: cfg.RuncPath, Root: cfg.RuncRoot, Exec: s.reaper.Exec}
	return s
}

// listen binds the socket, replacing a stale one but not a live monitor's.
func listen(path string) (net.Listener, error) {
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, fmt.Errorf("socket %s: a monitor is listening: %w", path, errdefs.ErrAlreadyExists)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: stale: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("socket %s: directory: %w", path, err)
	}
	return unixsock.Listen(path, 0o600)
}

func (s *Server) waitForStop() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(sigs)
	select {
	case sig := <-sigs:
		s.log.Printf("pod %s: signal %v", s.cfg.Pod, sig)
	case <-s.shutdown:
	}
}

func (s *Server) acceptLoop(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Printf("pod %s: accept: %v", s.cfg.Pod, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go s.serveConn(conn)
	}
}

// serveConn answers the one request a connection carries; an attach
// request keeps the connection for its session.
func (s *Server) serveConn(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(ioTimeout)) // fails only on a closed conn, which the next read or write reports
	var req monitor.Request
	var resp monitor.Response
	dec := json.NewDecoder(io.LimitReader(conn, maxRequestSize))
	if err := dec.Decode(&req); err != nil {
		resp = monitor.ErrorResponse(fmt.Errorf("request: %v: %w", err, errdefs.ErrInvalidArgument))
	} else if req.Op == monitor.OpAttach && req.Version == monitor.ProtocolVersion {
		s.serveAttach(conn, io.MultiReader(afterRequest(dec), conn), req)
		return
	} else {
		resp = s.handle(req)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout)) // fails only on a closed conn, which the next read or write reports
	if err := json.NewEncoder(conn).Encode(resp); err != nil {
		s.log.Printf("pod %s: %s: response: %v", s.cfg.Pod, req.Op, err)
	}
	if req.Op == monitor.OpShutdown && resp.Error == "" {
		s.stopOnce.Do(func() { close(s.shutdown) })
	}
}

func (s *Server) handle(req monitor.Request) monitor.Response {
	if req.Version != monitor.ProtocolVersion {
		return monitor.ErrorResponse(fmt.Errorf("request version %d: %w", req.Version, errdefs.ErrFailedPrecondition))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp := monitor.Response{Version: monitor.ProtocolVersion}
	var err error
	switch req.Op {
	case monitor.OpCreate:
		if req.Create == nil {
			err = fmt.Errorf("create: body: %w", errdefs.ErrInvalidArgument)
			break
		}
		resp.Pid, err = s.create(ctx, *req.Create)
		resp.Started = err == nil && req.Create.Run
	case monitor.OpStart:
		err = s.start(ctx, req.ID)
	case monitor.OpAdopt:
		if req.Adopt == nil {
			err = fmt.Errorf("adopt: body: %w", errdefs.ErrInvalidArgument)
			break
		}
		err = s.adopt(*req.Adopt)
	case monitor.OpList:
		resp.Containers = s.list()
	case monitor.OpForget:
		s.forget(req.ID)
	case monitor.OpReopenLog:
		err = s.reopenLog(req.ID)
	case monitor.OpShutdown, monitor.OpPing:
	default:
		err = fmt.Errorf("operation %q: %w", req.Op, errdefs.ErrNotImplemented)
	}
	if err != nil {
		s.log.Printf("pod %s: %s %s: %v", s.cfg.Pod, req.Op, req.ID, err)
		return monitor.ErrorResponse(err)
	}
	return resp
}

// afterRequest returns the bytes the decoder read past the request,
// without the newline that ends the request's line.
func afterRequest(dec *json.Decoder) io.Reader {
	rest, _ := io.ReadAll(dec.Buffered()) // an in-memory reader
	return bytes.NewReader(bytes.TrimLeft(rest, " \t\r\n"))
}
