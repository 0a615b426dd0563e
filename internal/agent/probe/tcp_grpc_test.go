package probe

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func tcpProbeSpec(port intstr.IntOrString) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: port}}, TimeoutSeconds: 1}
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := portOf(t, l.Addr().String())
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "db", ContainerPort: int32(open)}}}

	if got, msg := Run(context.Background(), tcpProbeSpec(intstr.FromInt32(int32(open))), podTarget(c), nil); got != Success {
		t.Errorf("open port: %v %q", got, msg)
	}
	if got, msg := Run(context.Background(), tcpProbeSpec(intstr.FromString("db")), podTarget(c), nil); got != Success {
		t.Errorf("open port by name: %v %q", got, msg)
	}
	got, msg := Run(context.Background(), tcpProbeSpec(intstr.FromInt32(int32(closedPort(t)))), podTarget(c), nil)
	if got != Failure || !strings.Contains(msg, "refused") {
		t.Errorf("closed port: %v %q, want a refused connection", got, msg)
	}
}

// healthServer serves grpc.health.v1 on loopback with the given statuses and
// records the User-Agent of the calls.
func healthServer(t *testing.T, statuses map[string]healthpb.HealthCheckResponse_ServingStatus) (port int, userAgents func() []string) {
	t.Helper()
	var mu sync.Mutex
	var agents []string
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		agents = append(agents, md.Get("user-agent")...)
		mu.Unlock()
		return next(ctx, req)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(record))
	if statuses != nil {
		hs := health.NewServer()
		for svc, st := range statuses {
			hs.SetServingStatus(svc, st)
		}
		healthpb.RegisterHealthServer(srv, hs)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }() // ends with Stop
	t.Cleanup(srv.Stop)
	return portOf(t, l.Addr().String()), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), agents...)
	}
}

func grpcProbeSpec(port int, service *string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: service}}, TimeoutSeconds: 1}
}

func TestGRPCProbe(t *testing.T) {
	port, userAgents := healthServer(t, map[string]healthpb.HealthCheckResponse_ServingStatus{
		"up":   healthpb.HealthCheckResponse_SERVING,
		"down": healthpb.HealthCheckResponse_NOT_SERVING,
	})
	svc := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		service *string
		want    Result
		msg     string
	}{
		{"whole server", nil, Success, "healthy"},
		{"serving service", svc("up"), Success, "healthy"},
		{"not serving service", svc("down"), Failure, "NOT_SERVING"},
		{"unknown service", svc("ghost"), Failure, "NotFound"},
	} {
		got, msg := Run(context.Background(), grpcProbeSpec(port, tc.service), podTarget(&v1.Container{}), nil)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: got %v %q, want %v containing %q", tc.name, got, msg, tc.want, tc.msg)
		}
	}
	if len(userAgents()) == 0 {
		t.Error("the server saw no User-Agent")
	}
	for _, ua := range userAgents() {
		if !strings.HasPrefix(ua, "kube-probe/"+kubeVersion) {
			t.Errorf("User-Agent %q", ua)
		}
	}
}

func TestGRPCProbeWithoutHealthService(t *testing.T) {
	port, _ := healthServer(t, nil)
	got, msg := Run(context.Background(), grpcProbeSpec(port, nil), podTarget(&v1.Container{}), nil)
	if got != Failure || !strings.Contains(msg, "does not implement") {
		t.Errorf("got %v %q", got, msg)
	}
}

func TestGRPCProbeClosedPort(t *testing.T) {
	got, msg := Run(context.Background(), grpcProbeSpec(closedPort(t), nil), podTarget(&v1.Container{}), nil)
	if got != Failure || !strings.Contains(msg, "cannot reach") {
		t.Errorf("got %v %q", got, msg)
	}
}

func TestGRPCProbeTimeout(t *testing.T) {
	// A listener that accepts and never speaks HTTP/2.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	o := runProbe(context.Background(), grpcProbeSpec(portOf(t, l.Addr().String()), nil), podTarget(&v1.Container{}), nil, 20*time.Millisecond)
	if got, msg := o.result, o.message; got != Failure || !strings.Contains(msg, "within 20ms") {
		t.Errorf("got %v %q, want a Failure naming the timeout of one unit (20ms)", got, msg)
	}
}
