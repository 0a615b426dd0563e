package network

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestDialInNamespaceRefusesHostNames(t *testing.T) {
	_, err := DialInNamespace(context.Background(), "/proc/self/ns/net", "tcp", "localhost:80")
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("dial of a host name: %v, want InvalidArgument", err)
	}
}

// TestDialInNamespaceConnects dials through setns into the namespace of
// the thread where a listener waits (the thread is locked so that the
// listener and the path name the same namespace, whatever other tests of
// the package do with theirs).
func TestDialInNamespaceConnects(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setns needs root")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	netns := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			_, _ = io.WriteString(c, "hi") // the test reads what arrived
			c.Close()
		}
	}()
	conn, err := DialInNamespace(context.Background(), netns, "tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, _ := io.ReadAll(conn)
	if string(got) != "hi" {
		t.Errorf("read %q, want hi", got)
	}
}
