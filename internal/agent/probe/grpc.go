package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// grpcProbe calls grpc.health.v1.Health/Check for the handler's service over
// plaintext and succeeds when the answer is SERVING.
func grpcProbe(ctx context.Context, a *v1.GRPCAction, t Target, timeout time.Duration) outcome {
	host, err := t.host("")
	if err != nil {
		return unknown(err)
	}
	if a.Port < 1 || a.Port > 65535 {
		return unknown(fmt.Errorf("invalid port number: %d", a.Port))
	}
	service := ""
	if a.Service != nil {
		service = *a.Service
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(a.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/"+kubeVersion),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer().DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		return failure(fmt.Sprintf("gRPC client for %s: %v", addr, err))
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return failure(grpcError(addr, err, timeout))
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return failure(fmt.Sprintf("service unhealthy (responded with %q)", s.String()))
	}
	return success("service healthy")
}

// grpcError words a failed health check by its status code.
func grpcError(addr string, err error, timeout time.Duration) string {
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unimplemented:
		return fmt.Sprintf("%s does not implement the gRPC health protocol (grpc.health.v1.Health): %s", addr, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Sprintf("health check of %s did not complete within %v", addr, timeout)
	case codes.Unavailable:
		return fmt.Sprintf("cannot reach %s: %s", addr, st.Message())
	}
	return fmt.Sprintf("health check of %s failed: %s: %s", addr, st.Code(), st.Message())
}
