package criserver

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
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

// A verbose ContainerStatus shows the env names, not their values (they
// may come from Secrets), and leaves the stored config alone.
func TestVerboseContainerStatusRedactsEnvValues(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Envs:     []*runtimeapi.KeyValue{{Key: "PASSWORD", Value: []byte("s3cr3t-value")}, nil},
	}
	p := &fakePods{containers: []pod.Container{{ID: "c1", SandboxID: "sb", State: pod.ContainerRunning, Config: cfg}}}
	s := newTestServer(p, &fakeImages{}, nil)
	resp, err := s.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: "c1", Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	info := resp.GetInfo()["info"]
	var decoded struct {
		Config struct{ Envs []struct{ Key, Value string } }
	}
	if err := json.Unmarshal([]byte(info), &decoded); err != nil {
		t.Fatal(err)
	}
	envs := decoded.Config.Envs
	if strings.Contains(info, "s3cr3t") || len(envs) == 0 || envs[0].Key != "PASSWORD" || string(envs[0].Value) != redactedEnvValue {
		t.Errorf("verbose info %s: want PASSWORD with its value redacted", info)
	}
	if string(cfg.Envs[0].Value) != "s3cr3t-value" {
		t.Errorf("the stored config was changed: %v", cfg.Envs[0])
	}
}
