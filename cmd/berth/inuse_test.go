package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/pod"
)

// fakeRuntime answers ListContainers, Unavailable for its first calls (a
// daemon still recovering).
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	containers  []*runtimeapi.Container
	unavailable int32
	calls       atomic.Int32
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if f.calls.Add(1) <= f.unavailable {
		return nil, status.Error(codes.Unavailable, "recovering")
	}
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

// serveFake serves f on a unix socket in a temp dir and returns its path.
func serveFake(t *testing.T, f *fakeRuntime) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, f)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return sock
}

func TestFindImageUsersAsksTheDaemonAndReadsRecords(t *testing.T) {
	f := &fakeRuntime{unavailable: 2, containers: []*runtimeapi.Container{
		{Id: "c1", ImageRef: hexID('a')}, {Id: "c2", ImageRef: hexID('a')}, {Id: "c3", ImageRef: hexID('b')},
	}}
	root := t.TempDir()
	cfg := config.Config{RootDir: root, Socket: serveFake(t, f)}
	c := &cli{t: t, root: root}
	c.writeContainerRecord("c1", hexID('a'))      // known to both
	c.writeContainerRecord("stopped", hexID('e')) // only on disk
	c.writeContainerRecord("quarantined", hexID('d'))
	quarantined := filepath.Join(root, "containers", "quarantined", "container.json")
	if err := os.Rename(quarantined, quarantined+pod.QuarantineSuffix); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "containers", "bad", "container.json"), "{not json")
	var warn strings.Builder
	users, err := findImageUsers(context.Background(), cfg, &warn)
	if err != nil {
		t.Fatal(err)
	}
	want := imageUsers{hexID('a'): {"c1", "c2"}, hexID('b'): {"c3"}, hexID('d'): {"quarantined"}, hexID('e'): {"stopped"}}
	if !reflect.DeepEqual(users, want) {
		t.Errorf("users = %v, want %v", users, want)
	}
	if f.calls.Load() != 3 {
		t.Errorf("ListContainers called %d times; want 2 Unavailable answers retried, then 1 success", f.calls.Load())
	}
	if !strings.Contains(warn.String(), "container bad") {
		t.Errorf("warning %q: want the corrupt record named", warn.String())
	}
}

func TestFindImageUsersWithoutDaemon(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(t.TempDir(), "stale.sock") // a socket file nobody listens on
	lis, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	lis.Close()
	c := &cli{t: t, root: root}
	c.writeContainerRecord("x", hexID('f'))
	users, err := findImageUsers(context.Background(), config.Config{RootDir: root, Socket: stale}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(users, imageUsers{hexID('f'): {"x"}}) {
		t.Errorf("users without a daemon = %v; want the record's image", users)
	}
}

func TestFindImageUsersDaemonErrorIsNotIgnored(t *testing.T) {
	// The embedded Unimplemented server answers every call with an error.
	sock := filepath.Join(t.TempDir(), "err.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &runtimeapi.UnimplementedRuntimeServiceServer{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	_, err = findImageUsers(context.Background(), config.Config{RootDir: t.TempDir(), Socket: sock}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), sock) {
		t.Errorf("daemon answering an error: %v; want an error naming the socket", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFindImageUsersCountsImageVolumes: the images a container's image
// volumes mount (which ListContainers does not report) are in use as long
// as its record, quarantined or not, exists.
func TestFindImageUsersCountsImageVolumes(t *testing.T) {
	root := t.TempDir()
	for id, name := range map[string]string{"vols": "container.json", "held": "container.json" + pod.QuarantineSuffix} {
		rec := fmt.Sprintf(`{"version":2,"id":%q,"state":"running","imageId":%q,"imageVolumes":[{"mount":1,"imageId":%q},{"mount":3,"imageId":%q}],"config":{}}`,
			id, hexID('a'), hexID('b'), hexID('c'))
		writeFile(t, filepath.Join(root, "containers", id, name), rec)
	}
	users, err := findImageUsers(context.Background(), config.Config{RootDir: root, Socket: filepath.Join(root, "none.sock")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := imageUsers{hexID('a'): {"held", "vols"}, hexID('b'): {"held", "vols"}, hexID('c'): {"held", "vols"}}
	if !reflect.DeepEqual(users, want) {
		t.Errorf("users = %v, want %v", users, want)
	}
	remove, _ := pruneCandidates([]image.Image{{ID: hexID('b')}, {ID: hexID('d')}}, users, true)
	if len(remove) != 1 || remove[0].ID != hexID('d') {
		t.Errorf("prune -a would remove %v; want only the image no container uses", remove)
	}
}
