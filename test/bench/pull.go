package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/registry"
)

// pullResults are the pull section's numbers.
type pullResults struct {
	skipped        string        // why the section did not run; "" if it did
	layers         int           // layers of the image
	blobBytes      int64         // compressed layer bytes
	unpackedBytes  int64         // bytes of the unpacked layer trees (berth's store)
	build, push    time.Duration // one-time setup, not part of any measurement
	berth          []time.Duration
	skopeo, tarX   []time.Duration // floor: fetch, extract
	floor          []time.Duration // their sums
	coldViolations int             // berth runs whose store still had a layer of the image
}

// pullBench is one pull section run: the registry, the image and the CRI
// image client.
type pullBench struct {
	e        *env
	img      runtimeapi.ImageServiceClient
	reg      *registry.Registry
	pushed   registry.Pushed
	floorDir string
	res      *pullResults
}

const pullRepoTag = "bench/large:v1"

// measurePull times CRI PullImage of the large image from a local registry
// into a cold store against the floor (skopeo copy to a dir + tar -xzf of
// every layer), alternating which goes first.
func (b *bench) measurePull(ctx context.Context) (err error) {
	r := &b.res.pull
	if reason := registry.SkipReason(); reason != "" {
		r.skipped = reason
		warnf("pull section skipped: %s", reason)
		return nil
	}
	if reason := floorToolsMissing(); reason != "" {
		r.skipped = reason
		warnf("pull section skipped: %s", reason)
		return nil
	}
	p := &pullBench{e: b.e, img: runtimeapi.NewImageServiceClient(b.d.conn), res: r,
		floorDir: filepath.Join(b.e.work, "pull-floor")}
	regDir := filepath.Join(b.e.work, "registry")
	if err := os.MkdirAll(regDir, 0o700); err != nil {
		return err
	}
	if p.reg, err = registry.Start(regDir, registry.Options{}); err != nil {
		return err
	}
	defer func() {
		if serr := p.reg.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("registry: %w", serr))
		}
		_ = os.RemoveAll(p.floorDir)
	}()
	if err := p.prepareImage(b.o.pullCache); err != nil {
		return err
	}
	for i := 0; i < b.o.pullRuns; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progressf("pull run %d/%d", i+1, b.o.pullRuns)
		if err := p.runOnce(ctx, i%2 == 1); err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
	}
	return nil
}

// prepareImage builds (or reuses from cacheDir) the large image and pushes it.
func (p *pullBench) prepareImage(cacheDir string) error {
	layoutDir := filepath.Join(p.e.work, "large-image")
	if cacheDir != "" {
		layoutDir = cacheDir
	}
	start := time.Now()
	img, err := registry.BuildImage(layoutDir, registry.LargeImage)
	if err != nil {
		return err
	}
	p.res.build = time.Since(start)
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	p.res.layers = len(m.Layers)
	for _, l := range m.Layers {
		p.res.blobBytes += l.Size
	}
	progressf("pull: image of %d layers, %.0f MB of blobs (built in %s); pushing", p.res.layers,
		float64(p.res.blobBytes)/1e6, p.res.build.Round(time.Millisecond))
	start = time.Now()
	if p.pushed, err = p.reg.Push(pullRepoTag, img); err != nil {
		return err
	}
	p.res.push = time.Since(start)
	return nil
}

// runOnce measures berth and the floor once each, in the given order.
func (p *pullBench) runOnce(ctx context.Context, floorFirst bool) error {
	steps := []func(context.Context) error{p.berthOnce, p.floorOnce}
	if floorFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// berthOnce pulls into a store without any of the image's layers, records
// the time, then removes the image again.
func (p *pullBench) berthOnce(ctx context.Context) error {
	layersBefore := dirCount(p.e.layersDir())
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	resp, err := p.img.PullImage(callCtx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: p.pushed.Ref}})
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("PullImage %s: %w", p.pushed.Ref, err)
	}
	if resp.GetImageRef() != p.pushed.ID {
		return fmt.Errorf("PullImage %s: image ref %s, want %s", p.pushed.Ref, resp.GetImageRef(), p.pushed.ID)
	}
	p.res.berth = append(p.res.berth, took)
	if added := dirCount(p.e.layersDir()) - layersBefore; added != p.res.layers {
		p.res.coldViolations++
		warnf("pull: %d new layer dirs after the pull, want %d: the store was not cold", added, p.res.layers)
	}
	if _, err := p.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: p.pushed.Ref}}); err != nil {
		return fmt.Errorf("RemoveImage %s: %w", p.pushed.Ref, err)
	}
	if left := dirCount(p.e.layersDir()) - layersBefore; left != 0 {
		warnf("pull: %d layer dirs left after RemoveImage", left)
	}
	return nil
}

func (e *env) layersDir() string { return filepath.Join(e.root, "images", "layers") }

func dirCount(dir string) int {
	entries, _ := os.ReadDir(dir)
	return len(entries)
}
