package pod

// Image volumes (CRI Mount.image, KEP-4639): an image of berth's store
// mounted read-only into a container. CreateContainer mounts each one on
// the host under the container's directory,
// <root>/containers/<id>/imagevolumes/<mount index>: an overlay of the
// image's layers with no upper dir, read-only, nosuid and nodev
// (image.MountImageVolume). The spec binds it, or its image_sub_path, at
// the container path. The container's removal, every rollback of its
// create and recovery unmount them (unmountImageVolumes). The record names
// the images (Container.ImageVolumes), so none is removed while the
// container exists (Container.ImageIDs).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/berth-dev/berth/internal/image"
)

// ImageVolume is one image volume of a container record.
type ImageVolume struct {
	// Mount is the index of the mount in the container's config.
	Mount   int    `json:"mount"`
	ImageID string `json:"imageId"`
}

// ImageIDs lists the images a container stands on: its own, under its
// rootfs, and those its image volumes mount. It is the one rule of image
// removal (CRI RemoveImage, berth rmi and prune, and so the agent's image
// garbage collection): none of them goes while the container exists,
// whatever its state.
func (c Container) ImageIDs() []string {
	ids := make([]string, 0, 1+len(c.ImageVolumes))
	if c.ImageID != "" {
		ids = append(ids, c.ImageID)
	}
	for _, v := range c.ImageVolumes {
		ids = append(ids, v.ImageID)
	}
	return ids
}

// UsesImage reports whether imageID is one of the container's ImageIDs.
func (c Container) UsesImage(imageID string) bool { return slices.Contains(c.ImageIDs(), imageID) }

// imageVolume is an image volume a create is about to mount.
type imageVolume struct {
	index                  int
	containerPath, subPath string
	img                    image.Image
}

// field names the mount in errors: mounts[1] "/data".
func (v imageVolume) field() string { return fmt.Sprintf("mounts[%d] %q", v.index, v.containerPath) }

// emptyLowerDir is the empty bottom layer every image volume of a
// container shares (overlayfs wants two lower dirs without an upper one).
const emptyLowerDir = "empty"

// imageVolumesDir is where a container's image volumes are mounted.
func imageVolumesDir(containerDir string) string { return filepath.Join(containerDir, "imagevolumes") }

// checkImageVolume checks a mount's image fields on their own, before any
// side effect (validateContainerConfig). An image volume is read-only by
// definition (api.proto): one asked read-write is refused, as critest
// expects; kubelet always asks read-only.
func checkImageVolume(m *runtimeapi.Mount) error {
	switch {
	case m.GetImage() == nil && m.GetImageSubPath() != "":
		return invalid("image_sub_path", "%q set on a mount without an image", m.GetImageSubPath())
	case m.GetImage() == nil:
		return nil
	case m.GetImage().GetImage() == "":
		return invalid("image.image", "empty")
	case !m.GetReadonly():
		return invalid("readonly", "false, but an image volume is read-only")
	}
	if err := image.CheckSubPath(m.GetImageSubPath()); err != nil {
		return fmt.Errorf("image_sub_path: %w", err)
	}
	return nil
}

// resolveImages finds the container's image and its image volumes' in the
// store, before any side effect, and holds them until release: a create
// in flight may stand on their layers before its record is registered.
// kubelet pulls an image volume's image before it creates the container,
// so one the store lacks is NotFound naming the mount and the image.
func (s *Service) resolveImages(cfg *runtimeapi.ContainerConfig) (image.Image, []imageVolume, func(), error) {
	img, err := s.cfg.Images.Resolve(cfg.GetImage().GetImage())
	if err != nil {
		return image.Image{}, nil, nil, fmt.Errorf("image: %w", err)
	}
	var vols []imageVolume
	for i, m := range cfg.GetMounts() {
		if m.GetImage() == nil {
			continue
		}
		v := imageVolume{index: i, containerPath: m.GetContainerPath(), subPath: m.GetImageSubPath()}
		if v.img, err = s.cfg.Images.Resolve(m.GetImage().GetImage()); err != nil {
			return image.Image{}, nil, nil, fmt.Errorf("%s: image volume: %w", v.field(), err)
		}
		vols = append(vols, v)
	}
	releases := []func(){s.holdImage(img.ID)}
	for _, v := range vols {
		releases = append(releases, s.holdImage(v.img.ID))
	}
	return img, vols, func() {
		for _, r := range releases {
			r()
		}
	}, nil
}

// recordImageVolumes is what a container record keeps of its image volumes.
func recordImageVolumes(vols []imageVolume) []ImageVolume {
	var out []ImageVolume
	for _, v := range vols {
		out = append(out, ImageVolume{Mount: v.index, ImageID: v.img.ID})
	}
	return out
}

// mountImageVolumes mounts the container's image volumes on the host
// (CreateContainer step 3) and returns what the spec binds of each (the
// image, or its image_sub_path), by mount index. In a pod with a user
// namespace their layers are idmapped into it.
func (s *Service) mountImageVolumes(rec *Container, sb *Sandbox, vols []imageVolume, rb *rollback) (map[int]string, error) {
	if len(vols) == 0 {
		return nil, nil
	}
	defer s.phase(opCreateContainer, "image_volumes")()
	rb.add("unmount image volumes", func(context.Context) error { return s.unmountImageVolumes(rec.Dir) })
	dir := imageVolumesDir(rec.Dir)
	sources := make(map[int]string, len(vols))
	for _, v := range vols {
		source, err := s.mountImageVolume(dir, v, rootfsIDMap(sb, filepath.Join(rec.Dir, idmapScratchPrefix+"volume-"+strconv.Itoa(v.index))))
		if err != nil {
			return nil, imageVolumeMountFailed{fmt.Errorf("%s: image volume %s: %w", v.field(), v.img.ID, err)}
		}
		sources[v.index] = source
	}
	return sources, nil
}

func (s *Service) mountImageVolume(dir string, v imageVolume, idmap *image.IDMap) (string, error) {
	layers, err := s.cfg.Images.LayerPaths(v.img)
	if err != nil {
		return "", fmt.Errorf("layers: %w", err)
	}
	target := filepath.Join(dir, strconv.Itoa(v.index))
	if err := s.host.MountImageVolume(layers, filepath.Join(dir, emptyLowerDir), target, idmap); err != nil {
		return "", err
	}
	return image.ResolveSubPath(target, v.subPath)
}

// unmountImageVolumes unmounts every image volume under a container's
// directory, then removes their directory. While one stays mounted it
// removes nothing, so that no removal ever walks into an image.
func (s *Service) unmountImageVolumes(containerDir string) error {
	dir := imageVolumesDir(containerDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("image volumes: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != emptyLowerDir {
			errs = append(errs, s.host.UnmountImageVolume(filepath.Join(dir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image volumes: %w", err)
	}
	return nil
}

// imageVolumeMountFailed marks a failure of the image volume step; see
// createError.
type imageVolumeMountFailed struct{ error }

func (e imageVolumeMountFailed) Unwrap() error { return e.error }

// createError names the container in a failed create's error. A failed
// image volume mount starts with "ImageVolumeMountFailed" (cri-api's
// errors), as kubelet counts them by that prefix.
func createError(id string, err error) error {
	err = fmt.Errorf("container %s: %w", id, err)
	if errors.As(err, new(imageVolumeMountFailed)) {
		return fmt.Errorf("%w: %w", crierrors.ErrImageVolumeMountFailed, err)
	}
	return err
}
