package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cdidevice"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
)

// oneImage is an image store with one image of one layer.
type oneImage struct{ layersErr error }

const oneImageID = "sha256:" + "99999999999999999999999999999999" + "99999999999999999999999999999999"

func (oneImage) Resolve(string) (image.Image, error) { return image.Image{ID: oneImageID}, nil }
func (i oneImage) LayerPaths(image.Image) ([]string, error) {
	return []string{"/nonexistent/layer"}, i.layersErr
}

func appConfig() *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}, Command: []string{"/bin/sh"}}
}

// containerUndoOps are the fake ops that undo a step of CreateContainer.
var containerUndoOps = []string{"unmount", "unmount-image", "forget", "kill", "delete"}

// TestCreateContainerRollback fails each step of CreateContainer
// (docs/architecture.md, "CreateContainer") in turn and checks that the
// steps before it were undone, newest first, and nothing is left.
func TestCreateContainerRollback(t *testing.T) {
	errFake := errors.New("injected failure")
	cases := []struct {
		step         string
		inject       func(t *testing.T, s *Service, f *fakeWorld, cfg *runtimeapi.ContainerConfig)
		wantErr      string
		done, undone []string
	}{
		{step: "1 reserve name", inject: reserveContainerTwin, wantErr: errdefs.ErrAlreadyExists.Error()},
		{step: "2 intent record", inject: blockContainerRecords, wantErr: "record dir"},
		{step: "3 image layers", inject: failLayers(errFake), wantErr: "layers: injected"},
		{step: "3 mount rootfs", inject: failContainerOp("mount", errFake), wantErr: "rootfs: injected",
			done: []string{"mount"}, undone: []string{"unmount"}},
		{step: "4 spec", inject: unknownTarget, wantErr: "target_id",
			done: []string{"mount"}, undone: []string{"unmount"}},
		{step: "4 CDI devices", inject: failCDIInject(errFake), wantErr: "spec: injected",
			done: []string{"mount"}, undone: []string{"unmount"}},
		{step: "5 record created", inject: blockCreatedRecord, wantErr: "container.json",
			done: []string{"mount"}, undone: []string{"unmount"}},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			s, f, sbID := readyPod(t, oneImage{})
			cfg := appConfig()
			tc.inject(t, s, f, cfg)
			id, err := s.CreateContainer(context.Background(), sbID, cfg, goodSandboxConfig())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CreateContainer = %q, %v; want an error with %q", id, err, tc.wantErr)
			}
			var done, undone []string
			for _, op := range f.log(true) {
				if slices.Contains(containerUndoOps, op) {
					undone = append(undone, op)
				} else {
					done = append(done, op)
				}
			}
			if !slices.Equal(done, tc.done) || !slices.Equal(undone, tc.undone) {
				t.Errorf("calls %v: done %v, want %v; undone %v, want %v", f.log(false), done, tc.done, undone, tc.undone)
			}
			checkNoContainerLeft(t, s, sbID, tc.step == "1 reserve name")
		})
	}
}

// checkNoContainerLeft checks that a failed CreateContainer left no
// record, bundle (but the sandbox's berth-pause) or hold on the image, and
// freed its name (but for a twin's reservation).
func checkNoContainerLeft(t *testing.T, s *Service, sandboxID string, twinHoldsName bool) {
	t.Helper()
	if ids := recordIDs(s.containersDir()); len(ids) != 0 {
		t.Errorf("container records left: %v", ids)
	}
	if ids := recordIDs(s.bundlesDir()); !slices.Equal(ids, []string{sandboxID}) {
		t.Errorf("bundles %v, want only berth-pause's", ids)
	}
	if len(s.Containers()) != 0 || len(s.ContainersUsingImage(oneImageID)) != 0 {
		t.Errorf("containers listed: %+v", s.Containers())
	}
	_, held := s.containerNames.Get(containerName(appConfig().GetMetadata(), goodSandboxConfig().GetMetadata()))
	if held != twinHoldsName {
		t.Errorf("name held %v; want %v", held, twinHoldsName)
	}
}

func failContainerOp(op string, err error) func(*testing.T, *Service, *fakeWorld, *runtimeapi.ContainerConfig) {
	return func(_ *testing.T, _ *Service, f *fakeWorld, _ *runtimeapi.ContainerConfig) { f.fail[op] = err }
}

func failLayers(err error) func(*testing.T, *Service, *fakeWorld, *runtimeapi.ContainerConfig) {
	return func(_ *testing.T, s *Service, _ *fakeWorld, _ *runtimeapi.ContainerConfig) {
		s.cfg.Images = oneImage{layersErr: err}
	}
}

func reserveContainerTwin(t *testing.T, s *Service, _ *fakeWorld, cfg *runtimeapi.ContainerConfig) {
	if err := s.containerNames.Reserve(containerName(cfg.GetMetadata(), goodSandboxConfig().GetMetadata()), "twin"); err != nil {
		t.Fatal(err)
	}
}

// blockContainerRecords puts a file where the container records dir is.
func blockContainerRecords(t *testing.T, s *Service, _ *fakeWorld, _ *runtimeapi.ContainerConfig) {
	if err := os.Remove(s.containersDir()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.containersDir(), "not a dir")
}

// unknownTarget makes the spec step fail: the container joins the PID
// namespace of a container that does not exist.
func unknownTarget(_ *testing.T, _ *Service, _ *fakeWorld, cfg *runtimeapi.ContainerConfig) {
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: testID("f")},
	}}
}

// blockCreatedRecord makes the created record fail to replace the intent:
// once the rootfs is mounted, a directory takes the record file's place.
func blockCreatedRecord(t *testing.T, s *Service, f *fakeWorld, _ *runtimeapi.ContainerConfig) {
	f.hook["mount"] = func(id string) {
		path := s.containerRecordPath(id)
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		writeFile(t, filepath.Join(path, "blocker"), "")
	}
}

// fakeDevices resolves every CDI device but fails Inject with injectErr.
type fakeDevices struct {
	checkErr, injectErr error
	injected            []string
}

func (d *fakeDevices) Check([]cdidevice.Request) error { return d.checkErr }
func (d *fakeDevices) Inject(_ *specs.Spec, reqs []cdidevice.Request) error {
	for _, r := range reqs {
		d.injected = append(d.injected, r.Name)
	}
	return d.injectErr
}

// failCDIInject asks for a CDI device whose edits cannot be applied.
func failCDIInject(err error) func(*testing.T, *Service, *fakeWorld, *runtimeapi.ContainerConfig) {
	return func(_ *testing.T, s *Service, _ *fakeWorld, cfg *runtimeapi.ContainerConfig) {
		s.cfg.Devices = &fakeDevices{injectErr: err}
		cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "example.com/gpu=0"}}
	}
}

// TestCreateContainerRefusesCDIDevicesBeforeAnySideEffect: a device the
// registry cannot resolve, a name that is not qualified, or any device
// without a registry refuses the create with nothing done.
func TestCreateContainerRefusesCDIDevicesBeforeAnySideEffect(t *testing.T) {
	unresolved := fmt.Errorf("cdi_devices[0]: no spec: %w", errdefs.ErrInvalidArgument)
	for _, tc := range []struct {
		name    string
		devices Devices
		device  string
		want    error
	}{
		{"unresolved", &fakeDevices{checkErr: unresolved}, "example.com/gpu=0", errdefs.ErrInvalidArgument},
		{"unqualified", &fakeDevices{}, "gpu0", errdefs.ErrInvalidArgument},
		{"no registry", nil, "example.com/gpu=0", errdefs.ErrFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f, sbID := readyPod(t, oneImage{})
			s.cfg.Devices = tc.devices
			cfg := appConfig()
			cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: tc.device}}
			if _, err := s.CreateContainer(context.Background(), sbID, cfg, goodSandboxConfig()); !errors.Is(err, tc.want) ||
				!strings.HasPrefix(err.Error(), `container "app": cdi_devices[0]: `) {
				t.Errorf("CreateContainer = %v; want %v naming the container and the field", err, tc.want)
			}
			if ops := f.log(false); len(ops) != 0 {
				t.Errorf("side effects of a refused create: %v", ops)
			}
			checkNoContainerLeft(t, s, sbID, false)
		})
	}
}
