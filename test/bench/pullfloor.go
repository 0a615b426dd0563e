package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// floorToolsMissing says which floor tool is not installed, or "".
func floorToolsMissing() string {
	for _, tool := range []string{"skopeo", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not in PATH (`make deps` installs it)"
		}
	}
	return ""
}

// floorOnce times `skopeo copy docker://<registry>/<image> dir:<dir>` and
// then `tar -xzf` of every layer blob into a directory of its own, one
// after the other, as berth unpacks each layer into its own directory.
func (p *pullBench) floorOnce(ctx context.Context) error {
	if err := os.RemoveAll(p.floorDir); err != nil {
		return err
	}
	blobs, extract := filepath.Join(p.floorDir, "blobs"), filepath.Join(p.floorDir, "layers")
	if err := os.MkdirAll(extract, 0o700); err != nil {
		return err
	}
	start := time.Now()
	if err := runTool(ctx, "skopeo", "copy", "--insecure-policy", "--src-tls-verify=false",
		"docker://"+p.pushed.Ref, "dir:"+blobs); err != nil {
		return err
	}
	fetched := time.Now()
	layers, err := skopeoLayers(blobs)
	if err != nil {
		return err
	}
	for i, l := range layers {
		dir := filepath.Join(extract, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := runTool(ctx, "tar", "-xzf", filepath.Join(blobs, l), "-C", dir); err != nil {
			return err
		}
	}
	done := time.Now()
	p.res.skopeo = append(p.res.skopeo, fetched.Sub(start))
	p.res.tarX = append(p.res.tarX, done.Sub(fetched))
	p.res.floor = append(p.res.floor, done.Sub(start))
	if p.res.unpackedBytes == 0 {
		p.res.unpackedBytes = treeBytes(extract)
	}
	return os.RemoveAll(p.floorDir)
}

// skopeoLayers reads the manifest skopeo wrote and returns the layer blob
// file names in order (skopeo's dir: transport names blobs by digest hex).
func skopeoLayers(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("skopeo dir: %w", err)
	}
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("skopeo dir: manifest.json: %w", err)
	}
	var out []string
	for _, l := range m.Layers {
		out = append(out, strings.TrimPrefix(l.Digest, "sha256:"))
	}
	return out, nil
}

func runTool(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(dir string) int64 {
	var total int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
		return nil
	})
	return total
}
