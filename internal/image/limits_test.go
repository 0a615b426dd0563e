package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// smallLimits keep the test bombs small: 4 MiB per layer, 6 per image.
var smallLimits = Limits{MaxEntrySize: 8 << 20, MaxLayerSize: 4 << 20, MaxImageSize: 6 << 20, MaxEntries: 100}

// bombLayer is a layer holding one file of size zero bytes: a few KiB
// compressed, size bytes unpacked.
func bombLayer(t *testing.T, file string, size int64, comp compression.Compression) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: file, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}))
	_, err := io.CopyN(tw, zeros{}, size)
	must(t, err)
	must(t, tw.Close())
	raw := buf.Bytes()
	opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	opts := []tarball.LayerOption{tarball.WithCompression(comp)}
	if comp == compression.ZStd {
		opts = append(opts, tarball.WithMediaType(types.OCILayerZStd))
	}
	l, err := tarball.LayerFromOpener(opener, opts...)
	must(t, err)
	if c, _ := l.Size(); c > 64<<10 {
		t.Fatalf("bomb layer compresses to %d bytes", c)
	}
	return l
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// writeLayout writes img as an OCI layout named name.
func writeLayout(t *testing.T, img v1.Image, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img, layout.WithAnnotations(map[string]string{ocispec.AnnotationRefName: name})))
	return dir
}

func limitedStore(t *testing.T, lim Limits) *Store {
	s := openTestStore(t)
	s.SetLimits(lim)
	return s
}

// wantLimitErr checks err is of class and names every part of want.
func wantLimitErr(t *testing.T, err, class error, want ...string) {
	t.Helper()
	if err == nil || !errors.Is(err, class) {
		t.Fatalf("error = %v, want %v", err, class)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestImportLayerBound(t *testing.T) {
	s := limitedStore(t, smallLimits)
	bomb := bombLayer(t, "zeros", 5<<20, compression.GZip)
	d, _ := bomb.Digest()
	_, err := s.Import(context.Background(), writeLayout(t, testImage(t, "amd64", bomb), "example.com/bomb:1"))
	wantLimitErr(t, err, errdefs.ErrInvalidArgument, "example.com/bomb:1", d.String(), "max_layer_size")
	assertEmpty(t, s)
}

func TestImportImageBound(t *testing.T) {
	s := limitedStore(t, smallLimits)
	one := bombLayer(t, "a", 3<<20+512<<10, compression.GZip)
	two := bombLayer(t, "b", 3<<20+512<<10, compression.ZStd)
	d, _ := two.Digest()
	_, err := s.Import(context.Background(), writeLayout(t, testImage(t, "amd64", one, two), "example.com/bomb:2"))
	wantLimitErr(t, err, errdefs.ErrInvalidArgument, "example.com/bomb:2", d.String(), "max_image_size")
	assertEmpty(t, s)
	// Each layer alone is within the bounds: the budget is per image.
	_, err = s.Import(context.Background(), writeLayout(t, testImage(t, "amd64", one), "example.com/one:1"))
	must(t, err)
	_, err = s.Import(context.Background(), writeLayout(t, testImage(t, "amd64", two), "example.com/two:1"))
	must(t, err)
}

func TestPullImageBound(t *testing.T) {
	reg := newTestRegistry(t)
	one := bombLayer(t, "a", 3<<20+512<<10, compression.ZStd)
	two := bombLayer(t, "b", 3<<20+512<<10, compression.ZStd)
	ref := reg.push(t, "bomb", "1", testImage(t, "amd64", one, two))
	s, _ := newPullStore(t, PullConfig{})
	s.SetLimits(smallLimits)
	_, err := pull(t, s, ref, PullOptions{})
	wantLimitErr(t, err, errdefs.ErrInvalidArgument, ref, "max_image_size")
	assertNothingStored(t, s)
}

func TestPullLayerBound(t *testing.T) {
	reg := newTestRegistry(t)
	bomb := bombLayer(t, "zeros", 5<<20, compression.ZStd)
	d, _ := bomb.Digest()
	ref := reg.push(t, "bomb", "1", testImage(t, "amd64", bomb))
	s, _ := newPullStore(t, PullConfig{})
	s.SetLimits(smallLimits)
	_, err := pull(t, s, ref, PullOptions{})
	wantLimitErr(t, err, errdefs.ErrInvalidArgument, ref, d.String(), "max_layer_size")
	assertNothingStored(t, s)
}

func TestUnpackKeepsFreeSpaceReserve(t *testing.T) {
	small := bombLayer(t, "zeros", 1<<20, compression.GZip)
	img := testImage(t, "amd64", small)
	t.Run("before", func(t *testing.T) {
		lim := smallLimits
		lim.MinFree = Reserve{Percent: 100} // more than any filesystem has free
		s := limitedStore(t, lim)
		_, err := s.Import(context.Background(), writeLayout(t, img, "example.com/full:1"))
		wantLimitErr(t, err, errdefs.ErrFailedPrecondition, "example.com/full:1", "min_free_space")
		assertEmpty(t, s)
	})
	t.Run("during", func(t *testing.T) {
		lim := smallLimits
		lim.MaxEntrySize, lim.MaxLayerSize, lim.MaxImageSize = 64<<20, 64<<20, 64<<20
		lim.MinFree = Reserve{Bytes: 1 << 30}
		s := limitedStore(t, lim)
		// The filesystem fills as the layer unpacks: 2 GiB free at the
		// check before, 512 MiB at the first check during.
		var calls atomic.Int32
		s.statfs = func(_ string, st *unix.Statfs_t) error {
			st.Frsize, st.Blocks, st.Bavail = 4096, 1<<30, (2<<30)>>12
			if calls.Add(1) > 1 {
				st.Bavail = (512 << 20) >> 12
			}
			return nil
		}
		big := bombLayer(t, "zeros", spaceCheckEvery+1<<20, compression.ZStd)
		_, err := s.Import(context.Background(), writeLayout(t, testImage(t, "amd64", big), "example.com/fills:1"))
		wantLimitErr(t, err, errdefs.ErrFailedPrecondition, "example.com/fills:1", "min_free_space", "536870912 bytes available")
		if calls.Load() < 2 {
			t.Errorf("free space checked %d times, want before and during", calls.Load())
		}
		assertEmpty(t, s)
	})
}
