package criserver

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
)

// ListImages lists the images in the store, or the one the filter names.
func (s *Server) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		img, err := s.images.Resolve(ref)
		if errdefs.IsNotFound(err) {
			return &runtimeapi.ListImagesResponse{}, nil
		}
		if err != nil {
			return nil, err
		}
		return &runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{criImage(&img)}}, nil
	}
	imgs, err := s.images.List()
	if err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Image, 0, len(imgs))
	for i := range imgs {
		out = append(out, criImage(&imgs[i]))
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// ImageStatus returns a nil image, not an error, for an unknown image (api.proto).
func (s *Server) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalidArg("image.image", "empty")
	}
	img, err := s.images.Resolve(ref)
	if errdefs.IsNotFound(err) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: criImage(&img)}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": fmt.Sprintf(`{"id":%q,"layers":%d}`, img.ID, len(img.Layers))}
	}
	return resp, nil
}

// PullImage pulls the image from its registry (through the hosts config)
// with the request's credentials and returns the image id. Like containerd,
// it always asks the registry: kubelet calls it only when the pull policy
// wants the registry's answer (Always, or an image not present), so an
// unreachable registry is an error even when the store holds an older copy.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalidArg("image.image", "empty")
	}
	img, err := s.images.Pull(ctx, ref, image.PullOptions{Auth: pullAuth(req.GetAuth())})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// pullAuth converts the CRI AuthConfig; an empty one is anonymous.
func pullAuth(a *runtimeapi.AuthConfig) *image.Auth {
	if a == nil {
		return nil
	}
	out := &image.Auth{
		Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth(),
		IdentityToken: a.GetIdentityToken(), RegistryToken: a.GetRegistryToken(),
		ServerAddress: a.GetServerAddress(),
	}
	if *out == (image.Auth{}) {
		return nil
	}
	return out
}

// RemoveImage is idempotent; an image that containers use is refused, since
// their rootfs stands on its layers.
func (s *Server) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalidArg("image.image", "empty")
	}
	img, err := s.images.Resolve(ref)
	if errdefs.IsNotFound(err) {
		return &runtimeapi.RemoveImageResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if users := s.containers.ContainersUsingImage(img.ID); len(users) > 0 {
		return nil, fmt.Errorf("image %s is used by container %s: %w", img.ID, users[0], errdefs.ErrFailedPrecondition)
	}
	if err := s.images.Remove(img.ID); err != nil && !errdefs.IsNotFound(err) {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the image store's usage (image_filesystems) and the
// containers' writable layers' (container_filesystems). kubelet takes the
// two for separate filesystems (split image filesystem) when their
// mountpoints differ, so when both directories are on one filesystem
// both carry the image store's directory, as containerd reports its
// snapshotter's directory for both; kubelet measures the filesystem
// holding it.
func (s *Server) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	used, inodes, err := s.images.Usage()
	if err != nil {
		return nil, fmt.Errorf("image filesystem %s: %w", s.images.Root(), err)
	}
	now := time.Now()
	resp := &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp:  now.UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: s.images.Root()},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
	}}}
	if s.layers == nil {
		return resp, nil
	}
	layers, err := s.layers.WritableLayersUsage()
	if err != nil {
		return nil, fmt.Errorf("container filesystem: %w", err)
	}
	mountpoint := layers.Path
	if sameFilesystem(s.images.Root(), layers.Path) {
		mountpoint = s.images.Root()
	}
	resp.ContainerFilesystems = []*runtimeapi.FilesystemUsage{{
		Timestamp:  layers.Time.UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: layers.Bytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: layers.Inodes},
	}}
	return resp, nil
}

// sameFilesystem reports whether two directories are on one device; a
// directory that cannot be read is taken for another filesystem.
func sameFilesystem(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA != nil || errB != nil {
		return false
	}
	da, okA := sa.Sys().(*syscall.Stat_t)
	db, okB := sb.Sys().(*syscall.Stat_t)
	return okA && okB && da.Dev == db.Dev
}

// criImage converts a store image; the user comes from the image config
// ("uid", "uid:gid", "name" or "name:group").
func criImage(img *image.Image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    img.RepoTags,
		RepoDigests: img.RepoDigests,
		Size:        uint64(max(img.Size, 0)),
		Spec:        &runtimeapi.ImageSpec{Image: img.ID},
	}
	user, _, _ := strings.Cut(img.Config.Config.User, ":")
	if user != "" {
		if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
			out.Uid = &runtimeapi.Int64Value{Value: uid}
		} else {
			out.Username = user
		}
	}
	return out
}
