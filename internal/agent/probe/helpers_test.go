package probe

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// execFunc adapts a function to Execer.
type execFunc func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error)

func (f execFunc) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	return f(ctx, id, cmd, timeout)
}

// waitFor polls cond for up to ten seconds: generous, for a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// podTarget is a target on the loopback address with the given spec.
func podTarget(c *v1.Container) Target {
	return Target{PodIP: "127.0.0.1", ContainerID: "c1", Container: c}
}

func execProbeSpec(cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}, TimeoutSeconds: 1}
}

func httpProbeSpec(port int, path string) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}},
		TimeoutSeconds: 1,
	}
}

// portOf is the port of a "host:port" or URL-ish address.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, l.Addr().String())
	l.Close()
	return port
}
