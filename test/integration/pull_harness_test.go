package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
)

// withHostsDir points the daemon's [registry] hosts_dir at dir.
func withHostsDir(dir string) daemonOption {
	return func(t *testing.T, o *harness.Options) {
		o.Config = filepath.Join(t.TempDir(), "config.toml")
		conf := fmt.Sprintf("[registry]\nhosts_dir = %q\n", dir)
		if err := os.WriteFile(o.Config, []byte(conf), 0o600); err != nil {
			t.Fatalf("berth config: %v", err)
		}
	}
}

// startRegistry starts a docker-registry for the test (skipping it when the
// binary is missing) and stops it when the test ends.
func startRegistry(t *testing.T, opts registry.Options) *registry.Registry {
	t.Helper()
	return registry.StartT(t, opts)
}

// writeHostsFile writes <hostsDir>/<host>/hosts.toml.
func writeHostsFile(t *testing.T, hostsDir, host, content string) {
	t.Helper()
	dir := filepath.Join(hostsDir, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pull calls PullImage with a 3-minute deadline.
func (d *daemon) pull(ref string, auth *runtimeapi.AuthConfig) (*runtimeapi.PullImageResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return d.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth})
}

// mustPull pulls ref and fails the test unless the returned ref is wantID.
func (d *daemon) mustPull(ref string, auth *runtimeapi.AuthConfig, wantID string) {
	d.T.Helper()
	resp, err := d.pull(ref, auth)
	if err != nil {
		d.T.Fatalf("PullImage %s: %v", ref, err)
	}
	if resp.GetImageRef() != wantID {
		d.T.Fatalf("PullImage %s: image ref %s, want the image id %s", ref, resp.GetImageRef(), wantID)
	}
}

// imageStatus returns the image ref names, or nil.
func (d *daemon) imageStatus(ref string) *runtimeapi.Image {
	d.T.Helper()
	st, err := d.Img.ImageStatus(d.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		d.T.Fatalf("ImageStatus %s: %v", ref, err)
	}
	return st.GetImage()
}

// imageIDs lists the ids ListImages returns, sorted.
func (d *daemon) imageIDs() []string {
	d.T.Helper()
	list, err := d.Img.ListImages(d.ctx(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		d.T.Fatalf("ListImages: %v", err)
	}
	var ids []string
	for _, img := range list.GetImages() {
		ids = append(ids, img.GetId())
	}
	slices.Sort(ids)
	return ids
}

// storeFiles lists the image store's files and directories (relative to
// <root>/images, temp files included), not descending into unpacked layer
// trees: what a failed or removed pull must leave as it found it.
func (d *daemon) storeFiles() []string {
	d.T.Helper()
	base := filepath.Join(d.Root, "images")
	var out []string
	err := filepath.WalkDir(base, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != base {
			return nil // removed while we walk: a cleanup in progress
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		if rel == "." || rel == "lock" || rel == "generation" {
			return nil
		}
		out = append(out, rel)
		if e.IsDir() && filepath.Base(filepath.Dir(rel)) == "layers" {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		d.T.Fatalf("image store files: %v", err)
	}
	slices.Sort(out)
	return out
}

// diffLists names the entries only in a and only in b.
func diffLists(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// blobGets reads the registry's access log.
func blobGets(t *testing.T, r *registry.Registry) map[string]int {
	t.Helper()
	counts, err := r.BlobGets()
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// runImage runs a container of image (its own command) in a new pod and
// returns its log once it has exited 0.
func (d *daemon) runImage(name, image string) []logRecord {
	d.T.Helper()
	podCfg := podConfig(d.T, name)
	podID := d.runPod(podCfg)
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		LogPath:  name + ".log",
	}
	id := d.run(podID, podCfg, cfg)
	if st := d.waitExited(id, 20*time.Second); st.GetExitCode() != 0 {
		d.T.Fatalf("container of %s: exit code %d (%s)", image, st.GetExitCode(), st.GetMessage())
	}
	return readLog(d.T, logPath(podCfg, cfg))
}

// mentionsAny reports whether msg contains one of the words.
func mentionsAny(msg string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}
