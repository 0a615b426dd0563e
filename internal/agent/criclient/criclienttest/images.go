package criclienttest

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeImage is the image a pull of ref brings: its id is "sha256:" + ref.
func fakeImage(ref string) *runtimeapi.Image {
	return &runtimeapi.Image{Id: "sha256:" + ref, RepoTags: []string{ref}, Size: 1 << 20}
}

// imageLocked finds an image by reference or id (the caller holds f.mu).
func (f *Runtime) imageLocked(ref string) *runtimeapi.Image {
	if img := f.images[ref]; img != nil {
		return img
	}
	for _, img := range f.images {
		if img.GetId() == ref {
			return img
		}
	}
	return nil
}

// ImageStatus refuses a reference with a space (InvalidArgument), as a
// runtime's reference parser does.
func (f *Runtime) ImageStatus(_ context.Context, ref string) (*runtimeapi.Image, error) {
	if strings.Contains(ref, " ") {
		return nil, status.Errorf(codes.InvalidArgument, "parse image reference %q", ref)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	img := f.imageLocked(ref)
	if img == nil {
		return nil, nil
	}
	return proto.CloneOf(img), nil
}

// ListImages lists every image once.
func (f *Runtime) ListImages(context.Context) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []*runtimeapi.Image
	for _, img := range f.images {
		if !seen[img.GetId()] {
			seen[img.GetId()] = true
			out = append(out, proto.CloneOf(img))
		}
	}
	return out, nil
}

// RemoveImage removes an image (by reference or id) and every reference
// to it, and records "rmi <id>"; it refuses an image a container uses,
// as its own or an image volume's, as berth does.
func (f *Runtime) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	img := f.imageLocked(ref)
	if img == nil {
		return nil
	}
	for _, c := range f.containers {
		refs := []string{c.config.GetImage().GetImage()}
		for _, m := range c.config.GetMounts() {
			refs = append(refs, m.GetImage().GetImage())
		}
		for _, ref := range refs {
			if u := f.imageLocked(ref); u != nil && u.GetId() == img.GetId() {
				return status.Errorf(codes.FailedPrecondition, "image %s is used by container %s", img.GetId(), c.id)
			}
		}
	}
	for key, other := range f.images {
		if other.GetId() == img.GetId() {
			delete(f.images, key)
		}
	}
	f.record("rmi " + img.GetId())
	return nil
}

// ImageFsInfo returns what SetImageFs set (an empty answer before).
func (f *Runtime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.imageFs == nil {
		return &runtimeapi.ImageFsInfoResponse{}, nil
	}
	return proto.CloneOf(f.imageFs), nil
}

// SetImageFs sets what ImageFsInfo returns.
func (f *Runtime) SetImageFs(resp *runtimeapi.ImageFsInfoResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imageFs = resp
}

// AddImage adds an image under its id and each of its RepoTags.
func (f *Runtime) AddImage(img *runtimeapi.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[img.GetId()] = img
	for _, tag := range img.GetRepoTags() {
		f.images[tag] = img
	}
}

// PullImage records "pull <ref>", or "pull <ref> as <user>" with
// credentials, and fails as SetPullError or SetPullAuth say.
func (f *Runtime) PullImage(_ context.Context, ref string, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if auth != nil {
		f.record("pull " + ref + " as " + auth.GetUsername())
	} else {
		f.record("pull " + ref)
	}
	if f.pullErr != nil {
		return "", f.pullErr
	}
	if f.pullAuth != nil {
		if err := f.pullAuth(ref, auth); err != nil {
			return "", err
		}
	}
	if f.images[ref] == nil {
		f.images[ref] = fakeImage(ref)
	}
	return f.images[ref].GetId(), nil
}
