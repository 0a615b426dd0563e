package criserver

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The server takes requests of up to MaxMessageSize, not gRPC's 4 MiB:
// a sandbox config with large annotations must not fail with
// ResourceExhausted.
func TestServerMessageLimit(t *testing.T) {
	s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}, Version: "test"})
	s.SetReady()
	g := grpc.NewServer(s.GRPCOptions()...)
	s.Register(g)
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	if _, err := client.Version(ctx, &runtimeapi.VersionRequest{Version: strings.Repeat("x", 10<<20)}); err != nil {
		t.Errorf("a 10 MiB request: %v", err)
	}
	_, err = client.Version(ctx, &runtimeapi.VersionRequest{Version: strings.Repeat("x", MaxMessageSize+1)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over the limit: %v; want ResourceExhausted", err)
	}
}
