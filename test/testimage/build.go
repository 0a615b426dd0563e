package testimage

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Options describe one test image.
type Options struct {
	Name                 string // e.g. "busybox" or a fully qualified name; "" → untagged
	Entrypoint, Cmd, Env []string
	User, WorkingDir     string
	StopSignal           string
	// ExtraFiles maps a path in the image to its content, in a separate top
	// layer; a script (#!) or an ELF binary is executable (0755).
	ExtraFiles map[string]string
	Layers     int // layers the base content is split into (0 means 1)
	// Bare leaves the base content (busybox, /etc, ...) out: the image
	// holds ExtraFiles only, e.g. one static binary and no shell.
	Bare bool
	// Symlinks maps a path in the image to a symlink's target, in the
	// layer of ExtraFiles.
	Symlinks map[string]string
}

// DefaultEnv is the environment of images whose Options set none.
var DefaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// layer is one built layer: the uncompressed tar and its gzip blob.
type layer struct {
	tar, gz []byte
	diffID  digest.Digest
	digest  digest.Digest
}

// built is one image in memory.
type built struct {
	name     string
	layers   []layer
	config   []byte
	configID digest.Digest
	manifest []byte
}

func build(opts Options) (built, error) {
	var base []entry
	var chunks [][]entry
	var err error
	if !opts.Bare {
		if base, err = baseEntries(); err != nil {
			return built{}, err
		}
		if chunks, err = splitLayers(base, max(opts.Layers, 1)); err != nil {
			return built{}, err
		}
	}
	if len(opts.ExtraFiles) > 0 || len(opts.Symlinks) > 0 {
		chunks = append(chunks, append(extraEntries(opts.ExtraFiles, base), symlinkEntries(opts.Symlinks, base)...))
	}
	b := built{name: opts.Name}
	for _, c := range chunks {
		l, err := makeLayer(c)
		if err != nil {
			return built{}, err
		}
		b.layers = append(b.layers, l)
	}
	if b.config, err = json.Marshal(imageConfig(opts, b.layers)); err != nil {
		return built{}, err
	}
	b.configID = digest.FromBytes(b.config)
	if b.manifest, err = json.Marshal(b.ociManifest()); err != nil {
		return built{}, err
	}
	return b, nil
}

func makeLayer(entries []entry) (layer, error) {
	t, err := tarBytes(entries)
	if err != nil {
		return layer{}, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(t); err != nil {
		return layer{}, err
	}
	if err := zw.Close(); err != nil {
		return layer{}, err
	}
	return layer{tar: t, gz: gz.Bytes(), diffID: digest.FromBytes(t), digest: digest.FromBytes(gz.Bytes())}, nil
}

func imageConfig(opts Options, layers []layer) ocispec.Image {
	created := Epoch
	env := opts.Env
	if len(env) == 0 {
		env = DefaultEnv
	}
	cmd := opts.Cmd
	if len(cmd) == 0 && len(opts.Entrypoint) == 0 {
		cmd = []string{"sh"}
	}
	img := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			User: opts.User, Env: env, Entrypoint: opts.Entrypoint, Cmd: cmd,
			WorkingDir: opts.WorkingDir, StopSignal: opts.StopSignal,
		},
		RootFS: ocispec.RootFS{Type: "layers"},
	}
	for _, l := range layers {
		img.RootFS.DiffIDs = append(img.RootFS.DiffIDs, l.diffID)
		img.History = append(img.History, ocispec.History{Created: &created, CreatedBy: "testimage"})
	}
	return img
}

func (b built) ociManifest() ocispec.Manifest {
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageConfig, Digest: b.configID, Size: int64(len(b.config)),
		},
	}
	for _, l := range b.layers {
		m.Layers = append(m.Layers, ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageLayerGzip, Digest: l.digest, Size: int64(len(l.gz)),
		})
	}
	return m
}

// ID returns the image id ("sha256:<config digest hex>") opts produce.
func ID(opts Options) (string, error) {
	b, err := build(opts)
	if err != nil {
		return "", err
	}
	return b.configID.String(), nil
}

func buildAll(opts []Options) ([]built, error) {
	if len(opts) == 0 {
		return nil, fmt.Errorf("testimage: no images requested")
	}
	out := make([]built, 0, len(opts))
	for _, o := range opts {
		b, err := build(o)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func hexOf(d digest.Digest) string { return d.Encoded() }
