package criserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/pod"
)

type fakePods struct {
	sandboxes  []pod.Sandbox
	containers []pod.Container
	inUse      map[string][]string
}

func (f *fakePods) RunSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error) {
	return "", errors.New("not used")
}
func (f *fakePods) StopSandbox(context.Context, string) error   { return nil }
func (f *fakePods) RemoveSandbox(context.Context, string) error { return nil }
func (f *fakePods) Sandbox(id string) (pod.Sandbox, error) {
	for _, s := range f.sandboxes {
		if s.ID == id {
			return s, nil
		}
	}
	return pod.Sandbox{}, fmt.Errorf("pod sandbox %q: %w", id, errdefs.ErrNotFound)
}
func (f *fakePods) Sandboxes() []pod.Sandbox { return f.sandboxes }
func (f *fakePods) CreateContainer(context.Context, string, *runtimeapi.ContainerConfig, *runtimeapi.PodSandboxConfig) (string, error) {
	return "", errors.New("not used")
}
func (f *fakePods) StartContainer(context.Context, string) error       { return nil }
func (f *fakePods) StopContainer(context.Context, string, int64) error { return nil }
func (f *fakePods) RemoveContainer(context.Context, string) error      { return nil }
func (f *fakePods) ReopenContainerLog(context.Context, string) error   { return nil }
func (f *fakePods) UpdateContainerResources(context.Context, string, *runtimeapi.LinuxContainerResources) error {
	return nil
}
func (f *fakePods) UpdatePodSandboxResources(context.Context, string, *runtimeapi.LinuxContainerResources, *runtimeapi.LinuxContainerResources) error {
	return nil
}
func (f *fakePods) Container(id string) (pod.Container, error) {
	for _, c := range f.containers {
		if c.ID == id {
			return c, nil
		}
	}
	return pod.Container{}, fmt.Errorf("container %q: %w", id, errdefs.ErrNotFound)
}
func (f *fakePods) Containers() []pod.Container             { return f.containers }
func (f *fakePods) ContainersUsingImage(id string) []string { return f.inUse[id] }

type fakeImages struct {
	root     string // Root; default /var/lib/berth/images
	images   []image.Image
	removed  []string
	pullAuth *image.Auth
	pullErr  error
}

func (f *fakeImages) Pull(_ context.Context, ref string, opts image.PullOptions) (image.Image, error) {
	f.pullAuth = opts.Auth
	if f.pullErr != nil {
		return image.Image{}, f.pullErr
	}
	return f.Resolve(ref)
}

func (f *fakeImages) Resolve(ref string) (image.Image, error) {
	for _, img := range f.images {
		if img.ID == ref || (len(img.RepoTags) > 0 && img.RepoTags[0] == ref) {
			return img, nil
		}
	}
	return image.Image{}, fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
}
func (f *fakeImages) List() ([]image.Image, error)   { return f.images, nil }
func (f *fakeImages) Remove(ref string) error        { f.removed = append(f.removed, ref); return nil }
func (f *fakeImages) Usage() (uint64, uint64, error) { return 10, 2, nil }
func (f *fakeImages) Root() string {
	if f.root != "" {
		return f.root
	}
	return "/var/lib/berth/images"
}

type fakeNetwork struct{ err error }

func (f fakeNetwork) Ready() error               { return f.err }
func (f fakeNetwork) UpdatePodCIDR(string) error { return nil }

func newTestServer(p *fakePods, imgs *fakeImages, netErr error) *Server {
	s := New(Config{Sandboxes: p, Containers: p, Images: imgs, Network: fakeNetwork{netErr}, Version: "test"})
	s.SetReady()
	return s
}

func TestToStatusMapsEveryClass(t *testing.T) {
	cases := map[error]codes.Code{
		errdefs.ErrNotFound:           codes.NotFound,
		errdefs.ErrAlreadyExists:      codes.AlreadyExists,
		errdefs.ErrInvalidArgument:    codes.InvalidArgument,
		errdefs.ErrFailedPrecondition: codes.FailedPrecondition,
		errdefs.ErrUnavailable:        codes.Unavailable,
		errdefs.ErrNotImplemented:     codes.Unimplemented,
		context.DeadlineExceeded:      codes.DeadlineExceeded,
		errors.New("plain"):           codes.Unknown,
	}
	for class, want := range cases {
		err := toStatus(fmt.Errorf("container abc: step: %w", class))
		if got := status.Code(err); got != want {
			t.Errorf("%v: code %v, want %v", class, got, want)
		}
		if st, _ := status.FromError(err); st.Message() == "" {
			t.Errorf("%v: empty message", class)
		}
	}
}

func TestInterceptorAnswersUnavailableUntilReady(t *testing.T) {
	s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}})
	info := &grpc.UnaryServerInfo{FullMethod: "/runtime.v1.RuntimeService/Version"}
	called := false
	handler := func(context.Context, any) (any, error) { called = true; return "ok", nil }
	if _, err := s.UnaryInterceptor(context.Background(), nil, info, handler); status.Code(err) != codes.Unavailable || called {
		t.Fatalf("before ready: err %v called %v, want Unavailable and no call", err, called)
	}
	s.SetReady()
	if resp, err := s.UnaryInterceptor(context.Background(), nil, info, handler); err != nil || resp != "ok" {
		t.Fatalf("after ready: %v %v", resp, err)
	}
}

func TestInterceptorTurnsPanicIntoInternal(t *testing.T) {
	s := newTestServer(&fakePods{}, &fakeImages{}, nil)
	info := &grpc.UnaryServerInfo{FullMethod: "/x"}
	_, err := s.UnaryInterceptor(context.Background(), nil, info, func(context.Context, any) (any, error) { panic("boom") })
	if status.Code(err) != codes.Internal {
		t.Fatalf("err %v, want Internal", err)
	}
}

func TestStatusReportsNetworkReason(t *testing.T) {
	s := newTestServer(&fakePods{}, &fakeImages{}, errors.New(`no network config found in /etc/cni/net.d`))
	resp, err := s.Status(context.Background(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.GetStatus().GetConditions() {
		switch c.GetType() {
		case runtimeapi.RuntimeReady:
			if !c.GetStatus() {
				t.Error("RuntimeReady false")
			}
		case runtimeapi.NetworkReady:
			if c.GetStatus() || c.GetReason() != "NetworkPluginNotReady" || c.GetMessage() != "cni: no network config found in /etc/cni/net.d" {
				t.Errorf("NetworkReady condition %v", c)
			}
		}
	}
}

type fakeHost struct{ controllers, dropped []string }

func (h fakeHost) CgroupControllers() []string { return h.controllers }
func (h fakeHost) DroppedResources() []string  { return h.dropped }

func TestStatusVerboseInfoSaysWhatTheHostLacksAndWhichRunc(t *testing.T) {
	for _, tc := range []struct {
		host HostResources
		runc OCIRuntime
		want string
	}{
		{nil, OCIRuntime{}, `{"name":"berth","ociRuntime":"runc","cgroupDriver":"cgroupfs"}`},
		{fakeHost{[]string{"cpu", "memory"}, []string{"hugepage_limits (hugetlb)"}}, OCIRuntime{Path: "/usr/local/bin/berth-runc", Version: "1.5.3"},
			`{"name":"berth","ociRuntime":"runc","ociRuntimePath":"/usr/local/bin/berth-runc","ociRuntimeVersion":"1.5.3","cgroupDriver":"cgroupfs","cgroupControllers":["cpu","memory"],"droppedResources":["hugepage_limits (hugetlb)"]}`},
	} {
		s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}, Host: tc.host, OCIRuntime: tc.runc})
		resp, err := s.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetInfo()["runtime"]; got != tc.want {
			t.Errorf("runtime info %s, want %s", got, tc.want)
		}
	}
}

func TestRuntimeConfigReportsTheCgroupDriver(t *testing.T) {
	for _, systemd := range []bool{false, true} {
		s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}, SystemdCgroup: systemd})
		resp, err := s.RuntimeConfig(context.Background(), &runtimeapi.RuntimeConfigRequest{})
		want := runtimeapi.CgroupDriver_CGROUPFS
		if systemd {
			want = runtimeapi.CgroupDriver_SYSTEMD
		}
		if err != nil || resp.GetLinux().GetCgroupDriver() != want {
			t.Errorf("systemd %v: RuntimeConfig %v, %v; want %v", systemd, resp, err, want)
		}
		status, err := s.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
		if err != nil || !strings.Contains(status.GetInfo()["runtime"], `"cgroupDriver":"`+strings.ToLower(want.String())+`"`) {
			t.Errorf("systemd %v: Status runtime info %q, %v", systemd, status.GetInfo()["runtime"], err)
		}
	}
}

type fakeQuarantine []pod.QuarantinedRecord

func (f fakeQuarantine) Quarantined() []pod.QuarantinedRecord { return f }

func TestStatusVerboseListsQuarantinedRecords(t *testing.T) {
	rec := pod.QuarantinedRecord{Kind: pod.KindSandbox, ID: "abc", Path: "/var/lib/berth/sandboxes/abc/sandbox.json.quarantined",
		Reason: "record version 2 is newer"}
	for _, tc := range []struct {
		q    Quarantine
		want string
	}{
		{nil, `[]`},
		{fakeQuarantine{rec}, `[{"kind":"sandbox","id":"abc","path":"/var/lib/berth/sandboxes/abc/sandbox.json.quarantined","reason":"record version 2 is newer"}]`},
	} {
		s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{}, Quarantine: tc.q})
		resp, err := s.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetInfo()["quarantinedRecords"]; got != tc.want {
			t.Errorf("quarantinedRecords = %s, want %s", got, tc.want)
		}
	}
}

func TestListContainersFilters(t *testing.T) {
	now := time.Now()
	mk := func(id, sb string, st pod.ContainerState, labels map[string]string) pod.Container {
		return pod.Container{ID: id, SandboxID: sb, State: st, CreatedAt: now,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: id}, Labels: labels}}
	}
	p := &fakePods{containers: []pod.Container{
		mk("aaa1", "s1", pod.ContainerRunning, map[string]string{"app": "web"}),
		mk("aab2", "s1", pod.ContainerExited, map[string]string{"app": "db"}),
		mk("bbb3", "s2", pod.ContainerRunning, map[string]string{"app": "web"}),
	}}
	s := newTestServer(p, &fakeImages{}, nil)
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	cases := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"none", nil, []string{"aaa1", "aab2", "bbb3"}},
		{"id prefix", &runtimeapi.ContainerFilter{Id: "aa"}, []string{"aaa1", "aab2"}},
		{"state", &runtimeapi.ContainerFilter{State: running}, []string{"aaa1", "bbb3"}},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "s2"}, []string{"bbb3"}},
		{"labels", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"app": "web"}}, []string{"aaa1", "bbb3"}},
		{"all", &runtimeapi.ContainerFilter{Id: "a", State: running, LabelSelector: map[string]string{"app": "web"}}, []string{"aaa1"}},
	}
	for _, tc := range cases {
		resp, err := s.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: tc.filter})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range resp.GetContainers() {
			got = append(got, c.GetId())
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// api.proto: "If the image is not present, returns a response with
// ImageStatusResponse.Image set to nil."
func TestImageStatusOfUnknownImageIsNil(t *testing.T) {
	s := newTestServer(&fakePods{}, &fakeImages{}, nil)
	resp, err := s.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nope"}})
	if err != nil || resp.GetImage() != nil {
		t.Fatalf("resp %v err %v, want nil image and no error", resp, err)
	}
}

func TestRemoveImageRefusesImageInUseAndIsIdempotent(t *testing.T) {
	imgs := &fakeImages{images: []image.Image{{ID: "sha256:1", RepoTags: []string{"busybox"}}}}
	p := &fakePods{inUse: map[string][]string{"sha256:1": {"c1"}}}
	s := newTestServer(p, imgs, nil)
	_, err := s.RemoveImage(context.Background(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	if !errors.Is(err, errdefs.ErrFailedPrecondition) || len(imgs.removed) != 0 {
		t.Fatalf("in use: err %v removed %v", err, imgs.removed)
	}
	// api.proto: "This call is idempotent, and must not return an error if the image has already been removed."
	if _, err := s.RemoveImage(context.Background(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "gone"}}); err != nil {
		t.Fatalf("unknown image: %v", err)
	}
}

func TestCRIImageUser(t *testing.T) {
	cases := map[string]struct {
		uid  int64
		name string
	}{"1000": {1000, ""}, "1000:1000": {1000, ""}, "nobody": {-1, "nobody"}, "": {-1, ""}}
	for user, want := range cases {
		img := image.Image{ID: "sha256:x"}
		img.Config.Config.User = user
		got := criImage(&img)
		if want.uid >= 0 && got.GetUid().GetValue() != want.uid || want.uid < 0 && got.GetUid() != nil || got.GetUsername() != want.name {
			t.Errorf("user %q: uid %v name %q", user, got.GetUid(), got.GetUsername())
		}
	}
}

func TestPullImagePassesCredentialsAndReturnsID(t *testing.T) {
	imgs := &fakeImages{images: []image.Image{{ID: "sha256:1", RepoTags: []string{"busybox"}}}}
	s := newTestServer(&fakePods{}, imgs, nil)
	resp, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Auth:  &runtimeapi.AuthConfig{Username: "u", Password: "p", IdentityToken: "i"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ImageRef != "sha256:1" {
		t.Errorf("image ref = %q, want the image id", resp.ImageRef)
	}
	want := image.Auth{Username: "u", Password: "p", IdentityToken: "i"}
	if imgs.pullAuth == nil || *imgs.pullAuth != want {
		t.Errorf("auth passed = %+v, want %+v", imgs.pullAuth, want)
	}
	if _, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: "busybox"}, Auth: &runtimeapi.AuthConfig{},
	}); err != nil || imgs.pullAuth != nil {
		t.Errorf("empty AuthConfig: err %v, auth %+v; want anonymous", err, imgs.pullAuth)
	}
}

func TestPullImageKeepsErrorClass(t *testing.T) {
	imgs := &fakeImages{pullErr: fmt.Errorf("image %q: unauthorized: %w", "x", errdefs.ErrFailedPrecondition)}
	s := newTestServer(&fakePods{}, imgs, nil)
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "x"}})
	if !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("err = %v, want FailedPrecondition", err)
	}
	if _, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{}}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("empty image: err = %v, want InvalidArgument", err)
	}
}

func TestPullImageAlwaysAsksTheRegistry(t *testing.T) {
	// An unreachable registry is an error even for an image in the store, as
	// with containerd: kubelet calls PullImage only when it wants the
	// registry's answer (policy Always, or an image not present).
	present := image.Image{ID: "sha256:1", RepoTags: []string{"busybox"}}
	cases := []struct {
		pullErr error
		want    codes.Code
	}{
		{fmt.Errorf("dial: %w", errdefs.ErrUnavailable), codes.Unavailable},
		{fmt.Errorf("401: %w", errdefs.ErrFailedPrecondition), codes.FailedPrecondition},
		{fmt.Errorf("manifest unknown: %w", errdefs.ErrNotFound), codes.NotFound},
	}
	for _, tc := range cases {
		s := newTestServer(&fakePods{}, &fakeImages{images: []image.Image{present}, pullErr: tc.pullErr}, nil)
		resp, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
		if status.Code(toStatus(err)) != tc.want || resp.GetImageRef() != "" {
			t.Errorf("pull error %v: ref %q err %v, want code %v", tc.pullErr, resp.GetImageRef(), err, tc.want)
		}
	}
}

type fakeLayers struct{ usage pod.DiskUsage }

func (f fakeLayers) WritableLayersUsage() (pod.DiskUsage, error) { return f.usage, nil }

// ImageFsInfo reports the image store as the image filesystem and the
// writable layers as the container filesystem, each with its directory,
// used bytes and inodes; without a ContainerFs, the image filesystem only
// (kubelet then takes it for both).
func TestImageFsInfoReportsImageAndContainerFilesystems(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	// Directories not on one filesystem (here: that do not exist) keep
	// their own mountpoints.
	s := New(Config{
		Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{root: "/nonexistent/berth/images"}, Network: fakeNetwork{},
		ContainerFs: fakeLayers{pod.DiskUsage{Path: "/nonexistent/berth/containers", Bytes: 4096, Inodes: 7, Time: at}},
	})
	resp, err := s.ImageFsInfo(context.Background(), &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	img, ctr := resp.GetImageFilesystems(), resp.GetContainerFilesystems()
	if len(img) != 1 || img[0].GetFsId().GetMountpoint() != "/nonexistent/berth/images" || img[0].GetUsedBytes().GetValue() != 10 ||
		img[0].GetInodesUsed().GetValue() != 2 || img[0].GetTimestamp() == 0 {
		t.Errorf("image filesystems %v", img)
	}
	if len(ctr) != 1 || ctr[0].GetFsId().GetMountpoint() != "/nonexistent/berth/containers" || ctr[0].GetUsedBytes().GetValue() != 4096 ||
		ctr[0].GetInodesUsed().GetValue() != 7 || ctr[0].GetTimestamp() != at.UnixNano() {
		t.Errorf("container filesystems %v", ctr)
	}
	// One filesystem for both: one mountpoint, or kubelet would take the
	// image filesystem for a split one.
	dir := t.TempDir()
	for _, d := range []string{"images", "containers"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s = New(Config{
		Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{root: filepath.Join(dir, "images")}, Network: fakeNetwork{},
		ContainerFs: fakeLayers{pod.DiskUsage{Path: filepath.Join(dir, "containers"), Bytes: 4096, Time: at}},
	})
	resp, err = s.ImageFsInfo(context.Background(), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || resp.GetContainerFilesystems()[0].GetFsId().GetMountpoint() != filepath.Join(dir, "images") ||
		resp.GetContainerFilesystems()[0].GetUsedBytes().GetValue() != 4096 {
		t.Errorf("one filesystem: %v, %v; want the image store's directory as the container filesystem's mountpoint", resp, err)
	}
	resp, err = newTestServer(&fakePods{}, &fakeImages{}, nil).ImageFsInfo(context.Background(), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(resp.GetImageFilesystems()) != 1 || len(resp.GetContainerFilesystems()) != 0 {
		t.Errorf("without ContainerFs: %v, %v", resp, err)
	}
}

// TestStatusListsEveryRuntimeHandler: "" and "runc" (the default, with its
// runc's features), then each other handler with its own runc's features,
// and the verbose info names each handler's runc.
func TestStatusListsEveryRuntimeHandler(t *testing.T) {
	s := New(Config{Sandboxes: &fakePods{}, Containers: &fakePods{}, Images: &fakeImages{}, Network: fakeNetwork{},
		RecursiveReadOnlyMounts: true,
		Handlers:                []Handler{{Name: "runc-system", OCIRuntime: OCIRuntime{Path: "/usr/sbin/runc", Version: "1.1.5+ds1"}}}})
	resp, err := s.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range resp.GetRuntimeHandlers() {
		got = append(got, fmt.Sprintf("%q rro=%v", h.GetName(), h.GetFeatures().GetRecursiveReadOnlyMounts()))
	}
	want := []string{`"" rro=true`, `"runc" rro=true`, `"runc-system" rro=false`}
	if !slices.Equal(got, want) {
		t.Errorf("runtime handlers %q, want %q", got, want)
	}
	if info := resp.GetInfo()["runtime"]; !strings.Contains(info, `"runtimeHandlers":{"runc-system":{"path":"/usr/sbin/runc","version":"1.1.5+ds1"}}`) {
		t.Errorf("runtime info %s does not name runc-system's runc", info)
	}
}
