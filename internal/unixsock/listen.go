package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// Listen binds a unix socket at path with the given mode (see the package
// doc). path must not exist: callers decide whether a socket already there
// is stale. Closing the listener removes path.
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, fmt.Errorf("socket %s: private directory: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: mode: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &listener{UnixListener: l, path: path}, nil
}

// listener removes its path once, on the first Close, before it stops
// accepting: whoever is refused finds no socket left behind.
type listener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *listener) Close() error {
	var rmErr error
	l.once.Do(func() {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			rmErr = err
		}
	})
	if err := l.UnixListener.Close(); err != nil {
		return err
	}
	return rmErr
}

// Addr reports the socket's final path, not the private one it was bound
// at.
func (l *listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }
