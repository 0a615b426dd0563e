package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
)

// volumeImages is an image store with the container's image (busybox,
// oneImageID) and an image volume's (volImageRef, volImageID), whose
// layers fail with volLayersErr.
type volumeImages struct{ volLayersErr error }

const volImageRef = "berth.test/data:v1"

var volImageID = "sha256:" + strings.Repeat("7", 64)

func (volumeImages) Resolve(ref string) (image.Image, error) {
	switch ref {
	case "busybox":
		return image.Image{ID: oneImageID}, nil
	case volImageRef:
		return image.Image{ID: volImageID}, nil
	}
	return image.Image{}, fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
}

func (v volumeImages) LayerPaths(img image.Image) ([]string, error) {
	if img.ID == volImageID {
		return []string{"/nonexistent/volume-layer"}, v.volLayersErr
	}
	return []string{"/nonexistent/layer"}, nil
}

// volumeConfig is appConfig with a bind mount and, as mounts[1], an image
// volume of volImageRef at /vol with subPath.
func volumeConfig(subPath string) *runtimeapi.ContainerConfig {
	cfg := appConfig()
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/srv/data"},
		{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: volImageRef}, ImageSubPath: subPath, Readonly: true},
	}
	return cfg
}

func TestContainerImageIDs(t *testing.T) {
	c := Container{ImageID: "sha256:a", ImageVolumes: []ImageVolume{{Mount: 2, ImageID: "sha256:b"}, {Mount: 3, ImageID: "sha256:a"}}}
	if got := c.ImageIDs(); !slices.Equal(got, []string{"sha256:a", "sha256:b", "sha256:a"}) {
		t.Errorf("ImageIDs = %q", got)
	}
	if !c.UsesImage("sha256:b") || c.UsesImage("sha256:c") || (Container{}).UsesImage("") {
		t.Error("UsesImage disagrees with ImageIDs")
	}
}

// TestCreateContainerImageVolumeRollback fails each step of an image
// volume's create in turn: what was mounted is unmounted, newest first,
// and nothing is left. A failed image volume step says
// ImageVolumeMountFailed first, as kubelet counts them so.
func TestCreateContainerImageVolumeRollback(t *testing.T) {
	errFake := errors.New("injected failure")
	cases := []struct {
		step         string
		inject       func(t *testing.T, s *Service, f *fakeWorld, cfg *runtimeapi.ContainerConfig)
		wantErr      string
		class        error
		done, undone []string
	}{
		{step: "3 image volume layers", wantErr: `ImageVolumeMountFailed: container `,
			inject: func(_ *testing.T, s *Service, _ *fakeWorld, _ *runtimeapi.ContainerConfig) {
				s.cfg.Images = volumeImages{volLayersErr: errFake}
			},
			done: []string{"mount"}, undone: []string{"unmount"}},
		{step: "3 mount image volume", inject: failContainerOp("mount-image", errFake), wantErr: `mounts[1] "/vol": image volume ` + volImageID + ": injected",
			done: []string{"mount", "mount-image"}, undone: []string{"unmount-image", "unmount"}},
		{step: "3 image sub path missing", wantErr: `image sub path "etc/missing": does not exist in the image`, class: errdefs.ErrNotFound,
			inject: func(_ *testing.T, _ *Service, _ *fakeWorld, cfg *runtimeapi.ContainerConfig) {
				cfg.Mounts[1].ImageSubPath = "etc/missing"
			},
			done: []string{"mount", "mount-image"}, undone: []string{"unmount-image", "unmount"}},
		{step: "4 spec", inject: unknownTarget, wantErr: "target_id",
			done: []string{"mount", "mount-image"}, undone: []string{"unmount-image", "unmount"}},
		{step: "5 record created", inject: blockCreatedRecord, wantErr: "container.json",
			done: []string{"mount", "mount-image"}, undone: []string{"unmount-image", "unmount"}},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			s, f, sbID := readyPod(t, volumeImages{})
			cfg := volumeConfig("")
			tc.inject(t, s, f, cfg)
			id, err := s.CreateContainer(context.Background(), sbID, cfg, goodSandboxConfig())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || (tc.class != nil && !errors.Is(err, tc.class)) {
				t.Fatalf("CreateContainer = %q, %v; want an error with %q", id, err, tc.wantErr)
			}
			if isMount := strings.HasPrefix(tc.step, "3 "); isMount != strings.HasPrefix(err.Error(), "ImageVolumeMountFailed: container ") {
				t.Errorf("error %q: starts with ImageVolumeMountFailed: %v, want %v", err, !isMount, isMount)
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
			checkNoContainerLeft(t, s, sbID, false)
			if users := s.ContainersUsingImage(volImageID); len(users) != 0 {
				t.Errorf("image volume's image still in use by %v", users)
			}
		})
	}
}

// TestCreateContainerRefusesImageVolumesBeforeAnySideEffect: an image the
// store lacks is NotFound naming the mount, its path and the image; a bad
// image field or sub path is InvalidArgument naming the field.
func TestCreateContainerRefusesImageVolumesBeforeAnySideEffect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(m *runtimeapi.Mount)
		class  error
		prefix string
	}{
		{"absent image", func(m *runtimeapi.Mount) { m.Image.Image = "berth.test/absent:v1" }, errdefs.ErrNotFound,
			`container "app": mounts[1] "/vol": image volume: image "berth.test/absent:v1": not found`},
		{"empty image", func(m *runtimeapi.Mount) { m.Image.Image = "" }, errdefs.ErrInvalidArgument, "config.mounts[1].image.image: empty"},
		{"sub path climbing", func(m *runtimeapi.Mount) { m.ImageSubPath = "etc/../../x" }, errdefs.ErrInvalidArgument,
			`config.mounts[1].image_sub_path: image sub path "etc/../../x": contains '..'`},
		{"sub path absolute", func(m *runtimeapi.Mount) { m.ImageSubPath = "/etc" }, errdefs.ErrInvalidArgument,
			`config.mounts[1].image_sub_path: image sub path "/etc": not relative`},
		{"sub path without image", func(m *runtimeapi.Mount) { m.Image, m.HostPath = nil, "/srv" }, errdefs.ErrInvalidArgument,
			`config.mounts[1].image_sub_path: "etc" set on a mount without an image`},
		{"read-write", func(m *runtimeapi.Mount) { m.Readonly = false }, errdefs.ErrInvalidArgument,
			"config.mounts[1].readonly: false, but an image volume is read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f, sbID := readyPod(t, volumeImages{})
			cfg := volumeConfig("etc")
			tc.edit(cfg.Mounts[1])
			if _, err := s.CreateContainer(context.Background(), sbID, cfg, goodSandboxConfig()); !errors.Is(err, tc.class) ||
				!strings.HasPrefix(err.Error(), tc.prefix) {
				t.Errorf("CreateContainer = %v; want %v starting %q", err, tc.class, tc.prefix)
			}
			if ops := f.log(false); len(ops) != 0 {
				t.Errorf("side effects of a refused create: %v", ops)
			}
			checkNoContainerLeft(t, s, sbID, false)
		})
	}
}

// TestImageVolumeLifecycle: the spec binds the image volume's sub path
// read-only, nosuid and nodev; while the container exists, of any state, its
// record names the image, which is in use; its removal unmounts it.
func TestImageVolumeLifecycle(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	s.cfg.Images = volumeImages{}
	ctx := context.Background()
	sbID, err := s.RunSandbox(ctx, goodSandboxConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	f.hook["mount-image"] = func(id string) {
		if err := os.MkdirAll(filepath.Join(s.containersDir(), id, "imagevolumes", "1", "etc", "app"), 0o755); err != nil {
			t.Error(err)
		}
	}
	id, err := s.CreateContainer(ctx, sbID, volumeConfig("etc/app"), goodSandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(filepath.Join(s.containersDir(), id, "imagevolumes", "1", "etc", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if m := specMount(t, s, id, "/vol"); m == nil || m.Source != want || strings.Join(m.Options, ",") != "rbind,rprivate,ro,nosuid,nodev" {
		t.Errorf("spec mount /vol = %+v; want a read-only nosuid nodev bind of %s", m, want)
	}
	var onDisk Container
	if err := readContainerRecord(s.containerRecordPath(id), id, &onDisk); err != nil ||
		!slices.Equal(onDisk.ImageVolumes, []ImageVolume{{Mount: 1, ImageID: volImageID}}) {
		t.Errorf("record's image volumes %+v (%v)", onDisk.ImageVolumes, err)
	}
	writeExit(t, s, id, 0, time.Now())
	if got := s.ContainersUsingImage(volImageID); !slices.Equal(got, []string{id}) {
		t.Errorf("users of the image volume's image = %v, want the exited container", got)
	}
	f.calls = nil
	if err := s.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.log(false), "unmount-image "+short(id)) {
		t.Errorf("calls %v: the image volume was not unmounted", f.log(false))
	}
	checkGone(t, filepath.Join(s.containersDir(), id))
	if got := s.ContainersUsingImage(volImageID); len(got) != 0 {
		t.Errorf("users after the removal: %v", got)
	}
}

// specMount is the mount at dest in a container's config.json.
func specMount(t *testing.T, s *Service, id, dest string) *specs.Mount {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.bundlesDir(), id, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	for i := range spec.Mounts {
		if spec.Mounts[i].Destination == dest {
			return &spec.Mounts[i]
		}
	}
	return nil
}

// putImageVolume gives container ctrID an image volume of volImageID,
// mounted (a directory, with the fakes) under its directory.
func putImageVolume(t *testing.T, s *Service, rec *Container) {
	t.Helper()
	rec.ImageVolumes = []ImageVolume{{Mount: 1, ImageID: volImageID}}
	saveContainerRecord(t, s, rec)
	writeFile(t, filepath.Join(imageVolumesDir(rec.Dir), "1", "etc", "passwd"), "root")
	if err := os.MkdirAll(filepath.Join(imageVolumesDir(rec.Dir), emptyLowerDir), 0o755); err != nil {
		t.Fatal(err)
	}
}

func imageVolumeRecoveryCases() []recoveryCase {
	orphanVolume := func(t *testing.T, s *Service, _ *fakeWorld) {
		writeFile(t, filepath.Join(s.containersDir(), orphanID, "imagevolumes", "1", "etc", "passwd"), "root")
	}
	return []recoveryCase{{
		row: "container record in creating with an image volume: the image volume unmounted too, dirs removed",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putImageVolume(t, s, putPodAndContainer(t, s, f, ContainerCreating))
		},
		calls: []string{"ping aaaaaaaa", "kill bbbbbbbb", "delete bbbbbbbb", "forget bbbbbbbb", "unmount bbbbbbbb", "unmount-image bbbbbbbb"},
		check: checkContainerGone,
	}, {
		row: "exited container with an image volume: kept mounted, its image in use",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putImageVolume(t, s, putPodAndContainer(t, s, f, ContainerRunning))
		},
		calls: []string{"ping aaaaaaaa", "state bbbbbbbb"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			checkContainerState(t, s, ContainerExited)
			if got := s.ContainersUsingImage(volImageID); !slices.Equal(got, []string{ctrID}) {
				t.Errorf("users of the image volume's image = %v", got)
			}
			if _, err := os.Stat(filepath.Join(s.containersDir(), ctrID, "imagevolumes", "1", "etc", "passwd")); err != nil {
				t.Error(err)
			}
		},
	}, {
		row: "unusable container record with an image volume: quarantined, its images in use",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			putImageVolume(t, s, putPodAndContainer(t, s, f, ContainerRunning))
			corruptConfig(t, s.containerRecordPath(ctrID))
		},
		calls:       []string{"ping aaaaaaaa"},
		quarantined: map[string]string{"container/" + ctrID: "field config"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if got := s.ContainersUsingImage(volImageID); !slices.Equal(got, []string{ctrID + " (quarantined)"}) {
				t.Errorf("users of the image volume's image = %v", got)
			}
		},
	}, {
		row:   "container dir without record holding an image volume: unmounted, removed",
		setup: orphanVolume,
		calls: []string{"unmount eeeeeeee", "unmount-image eeeeeeee"},
		check: checkOrphanGone,
	}, {
		row: "container dir without record whose image volume does not unmount: kept",
		setup: func(t *testing.T, s *Service, f *fakeWorld) {
			orphanVolume(t, s, f)
			f.fail["unmount-image"] = errors.New("injected: busy")
		},
		calls: []string{"unmount eeeeeeee", "unmount-image eeeeeeee"},
		check: func(t *testing.T, s *Service, _ *fakeWorld) {
			if _, err := os.Stat(filepath.Join(s.containersDir(), orphanID, "imagevolumes", "1", "etc", "passwd")); err != nil {
				t.Errorf("a directory holding a mounted image volume was removed: %v", err)
			}
		},
	}}
}
