package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is where Debian's docker-registry package installs the registry.
const Binary = "/usr/bin/docker-registry"

// Options choose a registry variant. The zero value is a plain HTTP registry
// without auth.
type Options struct {
	Username, Password string // both set: htpasswd basic auth with this one user
	TLS                bool   // serve HTTPS with a certificate of a generated test CA
}

// Registry is one running docker-registry on 127.0.0.1.
type Registry struct {
	Host     string // "127.0.0.1:<port>", the registry part of references
	URL      string // "http://<Host>" or "https://<Host>"
	CAFile   string // TLS only: the test CA's certificate (PEM)
	Username string // auth only
	Password string
	Dir      string // config.yml, htpasswd, certificates, storage/
	LogPath  string // the registry's stdout and stderr, access log included

	opts     Options
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd has been waited for
	stopOnce sync.Once
}

// SkipReason says why registry tests cannot run here, or "" if they can.
func SkipReason() string {
	if _, err := os.Stat(Binary); err != nil {
		return fmt.Sprintf("%s not found (Debian package docker-registry; `make deps` installs it)", Binary)
	}
	return ""
}

// StartT starts a registry in a test temp dir, skips the test when the
// binary is missing, fails it when the registry does not start, and stops
// the registry when the test ends.
func StartT(t testing.TB, opts Options) *Registry {
	t.Helper()
	if reason := SkipReason(); reason != "" {
		t.Skip(reason)
	}
	r, err := Start(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("registry %s: stop: %v", r.Host, err)
		}
	})
	return r
}

// Start starts a registry whose files live in dir (which must exist) and
// waits until it answers /v2/. The caller must call Stop.
func Start(dir string, opts Options) (*Registry, error) {
	if (opts.Username == "") != (opts.Password == "") {
		return nil, errors.New("registry options: username and password must be set together")
	}
	r := &Registry{Dir: dir, LogPath: filepath.Join(dir, "registry.log"), opts: opts,
		Username: opts.Username, Password: opts.Password}
	if err := r.writeCredentials(); err != nil {
		return nil, err
	}
	// A free port found by listening may be taken again before the registry
	// binds it; a few attempts make that race harmless.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = r.launchOnFreePort(); err == nil {
			return r, nil
		}
	}
	return nil, err
}

// writeCredentials writes the htpasswd file and the TLS files the options ask for.
func (r *Registry) writeCredentials() error {
	if r.opts.Username != "" {
		if err := writeHtpasswd(r.htpasswdPath(), r.opts.Username, r.opts.Password); err != nil {
			return err
		}
	}
	if r.opts.TLS {
		r.CAFile = filepath.Join(r.Dir, "ca.crt")
		if err := writeTestCA(r.Dir); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) launchOnFreePort() error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	r.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	r.URL = "http://" + r.Host
	if r.opts.TLS {
		r.URL = "https://" + r.Host
	}
	if err := os.WriteFile(r.configPath(), []byte(r.config()), 0o600); err != nil {
		return fmt.Errorf("registry config: %w", err)
	}
	if err := r.launch(); err != nil {
		return err
	}
	if err := r.waitReady(15 * time.Second); err != nil {
		_ = r.kill()
		return fmt.Errorf("registry %s: %w\n%s", r.Host, err, r.LogTail(20))
	}
	return nil
}

// launch starts the process in its own process group with its output
// appended to the log.
func (r *Registry) launch() error {
	log, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("registry log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(Binary, "serve", r.configPath())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("registry: %s: %w", Binary, err)
	}
	r.mu.Lock()
	r.cmd, r.exited = cmd, make(chan struct{})
	r.mu.Unlock()
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(r.exited)
	return nil
}

// waitReady polls GET /v2/ until it answers 200 (or 401 with auth).
func (r *Registry) waitReady(timeout time.Duration) error {
	client, err := r.HTTPClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-r.exited:
			return errors.New("exited before it answered /v2/")
		default:
		}
		resp, err := client.Get(r.URL + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/: status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HTTPClient returns a client that trusts the registry's test CA (if any).
func (r *Registry) HTTPClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, fmt.Errorf("registry CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA %s: no certificate", r.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// PID is the registry's process id (0 once stopped).
func (r *Registry) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the registry process is still alive.
func (r *Registry) Running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the registry (by pid), waits up to 5 s, then
// SIGKILL. It is idempotent.
func (r *Registry) Stop() error {
	var err error
	r.stopOnce.Do(func() {
		if !r.Running() {
			return
		}
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(5 * time.Second):
			err = fmt.Errorf("pid %d still running 5s after SIGTERM; killed", r.cmd.Process.Pid)
			_ = r.kill()
		}
	})
	return err
}

// Kill stops the registry at once with SIGKILL (connections are cut
// mid-transfer) and waits for it. It is idempotent.
func (r *Registry) Kill() error {
	var err error
	r.stopOnce.Do(func() { err = r.kill() })
	return err
}

func (r *Registry) kill() error {
	if !r.Running() {
		return nil
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("registry pid %d: SIGKILL: %w", r.cmd.Process.Pid, err)
	}
	<-r.exited
	return nil
}

// BytesWritten is the registry process's write(2) byte count
// (/proc/<pid>/io wchar): it grows as blobs are sent, so a test can act
// "after the first bytes" of a transfer.
func (r *Registry) BytesWritten() (int64, error) {
	pid := r.PID()
	if pid == 0 || !r.Running() {
		return 0, errors.New("registry not running")
	}
	return procWchar(pid)
}

// WaitBytesWritten waits until the registry has written more than n bytes
// beyond from, polling every millisecond.
func (r *Registry) WaitBytesWritten(ctx context.Context, from, n int64) error {
	for {
		w, err := r.BytesWritten()
		if err != nil {
			return err
		}
		if w-from > n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("registry wrote %d bytes, waited for %d: %w", w-from, n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func (r *Registry) configPath() string   { return filepath.Join(r.Dir, "config.yml") }
func (r *Registry) htpasswdPath() string { return filepath.Join(r.Dir, "htpasswd") }
func (r *Registry) storageDir() string   { return filepath.Join(r.Dir, "storage") }

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
