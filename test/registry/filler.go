package registry

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth-dev/berth/test/testimage"
)

// ImageSpec describes a generated image of filler files under /data on top
// of nothing (it has no shell: it is pulled, not run).
type ImageSpec struct {
	LayerMiB    []int // uncompressed size of each layer
	TextPercent int   // share of 64 KiB chunks that are text (compressible); the rest is random
	Level       int   // gzip level of the layer blobs
}

// LargeImage is the pull benchmark's image: one big base layer and smaller
// ones, as real images have; 60% text, 40% random content, default gzip
// level; about 360 MiB unpacked, 190 MB of blobs.
var LargeImage = ImageSpec{LayerMiB: []int{90, 70, 55, 45, 40, 30, 20, 10}, TextPercent: 60, Level: gzip.DefaultCompression}

// generatorVersion names the content generator; a layout built by another
// version or spec is rebuilt.
const generatorVersion = "filler-v1"

// BuildImage writes the image of spec as an OCI layout at dir (created if
// needed), or reuses the layout a previous call with the same spec left
// there, and opens it. Its content is deterministic.
func BuildImage(dir string, spec ImageSpec) (v1.Image, error) {
	marker, want := filepath.Join(dir, "complete"), fmt.Sprintf("%s %v", generatorVersion, spec)
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return openLayout(dir, func() error { return nil })
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, err
	}
	img, err := openLayout(dir, func() error { return writeFillerLayout(dir, spec) })
	if err != nil {
		return nil, err
	}
	return img, os.WriteFile(marker, []byte(want), 0o644)
}

// PushBuiltImage builds (or reuses) the image of spec in layoutDir and
// pushes it as <host>/<repoTag>.
func (r *Registry) PushBuiltImage(repoTag, layoutDir string, spec ImageSpec) (Pushed, error) {
	img, err := BuildImage(layoutDir, spec)
	if err != nil {
		return Pushed{}, err
	}
	return r.Push(repoTag, img)
}

// fillerLayer is one written layer blob.
type fillerLayer struct {
	digest, diffID string // "sha256:..."
	size           int64  // compressed
	err            error
}

// writeFillerLayout writes the layers in parallel, then config, manifest,
// index.json and oci-layout.
func writeFillerLayout(dir string, spec ImageSpec) error {
	layers := make([]fillerLayer, len(spec.LayerMiB))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	for i := range spec.LayerMiB {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			layers[i] = writeFillerLayer(dir, i, spec)
		}()
	}
	wg.Wait()
	for i, l := range layers {
		if l.err != nil {
			return fmt.Errorf("large image layer %d: %w", i, l.err)
		}
	}
	return writeFillerMetadata(dir, layers)
}

// writeFillerLayer writes layer i of spec as a gzip blob.
func writeFillerLayer(dir string, i int, spec ImageSpec) fillerLayer {
	tmp, err := os.CreateTemp(filepath.Join(dir, "blobs", "sha256"), "layer-")
	if err != nil {
		return fillerLayer{err: err}
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	blobHash, tarHash := sha256.New(), sha256.New()
	counter := &countingWriter{w: io.MultiWriter(tmp, blobHash)}
	zw, err := gzip.NewWriterLevel(counter, spec.Level)
	if err != nil {
		return fillerLayer{err: err}
	}
	if err := writeFillerTar(io.MultiWriter(zw, tarHash), i, int64(spec.LayerMiB[i])<<20, spec.TextPercent); err != nil {
		return fillerLayer{err: err}
	}
	if err := zw.Close(); err != nil {
		return fillerLayer{err: err}
	}
	if err := tmp.Close(); err != nil {
		return fillerLayer{err: err}
	}
	l := fillerLayer{digest: sha(blobHash), diffID: sha(tarHash), size: counter.n}
	l.err = os.Rename(tmp.Name(), blobPath(dir, l.digest))
	return l
}

// writeFillerTar writes files of 1–8 MiB under /data/<layer>/ until size
// bytes are written.
func writeFillerTar(w io.Writer, layer int, size int64, textPercent int) error {
	rng := rand.New(rand.NewChaCha8(seed(layer)))
	tw := tar.NewWriter(w)
	dir := fmt.Sprintf("data/layer%d/", layer)
	for _, d := range []string{"data/", dir} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: testimage.Epoch}); err != nil {
			return err
		}
	}
	for n, written := 0, int64(0); written < size; n++ {
		fileSize := min(int64(1+rng.IntN(8))<<20, size-written)
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%sfile%03d", dir, n), Mode: 0o644,
			Size: fileSize, ModTime: testimage.Epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if err := writeContent(tw, rng, fileSize, textPercent); err != nil {
			return err
		}
		written += fileSize
	}
	return tw.Close()
}

// words make the compressible part of the content.
var words = strings.Fields(`container image layer registry manifest digest blob config runtime
pod sandbox network namespace cgroup overlay mount rootfs kernel process signal socket
stream buffer archive compress extract verify index mirror upstream token header`)

// writeContent writes n bytes in 64 KiB chunks, textPercent% of them lines
// of random words, the others random bytes.
func writeContent(w io.Writer, rng *rand.Rand, n int64, textPercent int) error {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	var text strings.Builder
	for n > 0 {
		size := min(int64(chunk), n)
		b := buf[:size]
		if rng.IntN(100) >= textPercent {
			for i := 0; i+8 <= len(b); i += 8 {
				binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
			}
		} else {
			text.Reset()
			for int64(text.Len()) < size {
				text.WriteString(words[rng.IntN(len(words))])
				if rng.IntN(12) == 0 {
					text.WriteByte('\n')
				} else {
					text.WriteByte(' ')
				}
			}
			copy(b, text.String())
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n -= size
	}
	return nil
}

// writeFillerMetadata writes the config, manifest, index.json and oci-layout.
func writeFillerMetadata(dir string, layers []fillerLayer) error {
	cfg := map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "created": testimage.Epoch,
		"config": map[string]any{"Env": testimage.DefaultEnv, "Cmd": []string{"sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs(layers)},
	}
	cfgDesc, err := writeJSONBlob(dir, cfg, "application/vnd.oci.image.config.v1+json")
	if err != nil {
		return err
	}
	var layerDescs []map[string]any
	for _, l := range layers {
		layerDescs = append(layerDescs, map[string]any{
			"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": l.digest, "size": l.size})
	}
	manifest := map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": cfgDesc, "layers": layerDescs}
	mDesc, err := writeJSONBlob(dir, manifest, "application/vnd.oci.image.manifest.v1+json")
	if err != nil {
		return err
	}
	index := map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{mDesc}}
	data, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

func diffIDs(layers []fillerLayer) []string {
	out := make([]string, len(layers))
	for i, l := range layers {
		out[i] = l.diffID
	}
	return out
}

// writeJSONBlob stores v as a blob and returns its descriptor.
func writeJSONBlob(dir string, v any, mediaType string) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(h[:])
	if err := os.WriteFile(blobPath(dir, d), data, 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"mediaType": mediaType, "digest": d, "size": len(data)}, nil
}

func blobPath(dir, digest string) string {
	return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func sha(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

func seed(layer int) [32]byte {
	var s [32]byte
	copy(s[:], fmt.Sprintf("berth-filler-layer-%d", layer))
	return s
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
