package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth-dev/berth/test/testimage"
)

// The tests in this file run the built berth binary against a private root,
// with no daemon: the store is used directly, as with a stopped daemon.

var (
	buildOnce sync.Once
	berthBin  string
	buildErr  error
)

// berthBinary builds cmd/berth once per test run.
func berthBinary(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: importing and pulling unpack layers with their owners")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "berth-cli-test-")
		if err != nil {
			buildErr = err
			return
		}
		berthBin = filepath.Join(dir, "berth")
		out, err := exec.Command("go", "build", "-o", berthBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return berthBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if berthBin != "" {
		os.RemoveAll(filepath.Dir(berthBin))
	}
	os.Exit(code)
}

// cli runs berth with a private root and state dir.
type cli struct {
	t          *testing.T
	bin, root  string
	state, cfg string
	dockerCfg  string
}

func newCLI(t *testing.T) *cli {
	bin := berthBinary(t)
	dir := t.TempDir()
	c := &cli{t: t, bin: bin, root: filepath.Join(dir, "root"), state: filepath.Join(dir, "state"),
		cfg: filepath.Join(dir, "config.toml"), dockerCfg: filepath.Join(dir, "docker")}
	for _, d := range []string{c.root, c.state, c.dockerCfg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// An empty hosts dir, so that the host's registry config never applies.
	hostsCfg := fmt.Sprintf("[registry]\nhosts_dir = %q\n", filepath.Join(dir, "certs.d"))
	if err := os.WriteFile(c.cfg, []byte(hostsCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// run returns stdout and stderr and whether berth exited 0.
func (c *cli) run(args ...string) (stdout, stderr string, ok bool) {
	c.t.Helper()
	full := append(append([]string{}, args...), "--config", c.cfg, "--root", c.root, "--state", c.state)
	cmd := exec.Command(c.bin, full...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+c.dockerCfg, "TERM=xterm")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exitErr := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exitErr) {
		c.t.Fatalf("berth %v: %v", args, err)
	}
	return out.String(), errOut.String(), err == nil
}

// must runs berth and fails the test when it exits non-zero.
func (c *cli) must(args ...string) string {
	c.t.Helper()
	out, errOut, ok := c.run(args...)
	if !ok {
		c.t.Fatalf("berth %v failed:\n%s%s", args, out, errOut)
	}
	return out
}

func (c *cli) imagesJSON() imageList {
	c.t.Helper()
	var list imageList
	if err := json.Unmarshal([]byte(c.must("images", "-o", "json")), &list); err != nil {
		c.t.Fatalf("berth images -o json: %v", err)
	}
	return list
}

func (c *cli) storeFiles(sub string) []string {
	c.t.Helper()
	entries, err := os.ReadDir(filepath.Join(c.root, "images", sub))
	if err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// writeContainerRecord fakes the durable record of a container that uses
// imageID, as `berth serve` leaves it when stopped.
func (c *cli) writeContainerRecord(id, imageID string) {
	c.t.Helper()
	dir := filepath.Join(c.root, "containers", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"version":1,"id":%q,"state":"exited","imageId":%q,"config":{}}`, id, imageID)
	if err := os.WriteFile(filepath.Join(dir, "container.json"), []byte(rec), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// importTestImages imports a, b and c (tagged berth.test/cli/<x>:v1) and
// one untagged image, and returns their ids by tag ("" for the untagged).
func importTestImages(c *cli) map[string]string {
	c.t.Helper()
	layoutDir := filepath.Join(c.t.TempDir(), "layout")
	err := testimage.WriteLayout(layoutDir,
		testimage.Options{Name: "berth.test/cli/a:v1", Cmd: []string{"a"}},
		testimage.Options{Name: "berth.test/cli/b:v1", Cmd: []string{"b"}, ExtraFiles: map[string]string{"/b": "b"}},
		testimage.Options{Name: "berth.test/cli/c:v1", Cmd: []string{"c"}},
		testimage.Options{Cmd: []string{"untagged"}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.must("image", "import", layoutDir)
	ids := map[string]string{}
	for _, img := range c.imagesJSON().Images {
		if len(img.RepoTags) == 0 {
			ids[""] = img.ID
		}
		for _, tag := range img.RepoTags {
			ids[tag] = img.ID
		}
	}
	if len(ids) != 4 || ids[""] == "" || ids["berth.test/cli/b:v1"] == "" {
		c.t.Fatalf("images -o json after import: %v; want 3 tagged images and 1 untagged", ids)
	}
	return ids
}

func TestImportListRemovePrune(t *testing.T) {
	c := newCLI(t)
	ids := importTestImages(c)

	out := c.must("rmi", "berth.test/cli/a:v1")
	if out != "Deleted: berth.test/cli/a:v1\n" {
		t.Errorf("rmi output %q", out)
	}
	if _, errOut, ok := c.run("rmi", "berth.test/cli/a:v1"); ok || !strings.Contains(errOut, `"berth.test/cli/a:v1"`) || !strings.Contains(errOut, "berth images") {
		t.Errorf("rmi of a removed image: ok=%v stderr %q; want an error naming it and what to do", ok, errOut)
	}

	c.writeContainerRecord("ctr-uses-b", ids["berth.test/cli/b:v1"])
	_, errOut, ok := c.run("rmi", "berth.test/cli/b:v1")
	if ok || !strings.Contains(errOut, "used by container ctr-uses-b") || !strings.Contains(errOut, "remove the container first") {
		t.Errorf("rmi of an image a container uses: ok=%v stderr %q; want a refusal naming the container", ok, errOut)
	}

	out = c.must("image", "prune")
	if !strings.Contains(out, "Deleted: "+ids[""]) || !strings.Contains(out, "Removed 1 image, freed ") ||
		!strings.Contains(out, "1 image tagged but unused") {
		t.Errorf("image prune output:\n%s\nwant the untagged image removed and a hint about -a", out)
	}
	out = c.must("image", "prune", "--all")
	if !strings.Contains(out, "Deleted: berth.test/cli/c:v1") || strings.Contains(out, "cli/b") ||
		!strings.Contains(out, "Removed 1 image, freed ") {
		t.Errorf("image prune --all output:\n%s\nwant c removed and b (in use) kept", out)
	}
	if got := strings.TrimSpace(c.must("images", "-q")); got != ids["berth.test/cli/b:v1"] {
		t.Errorf("images -q after prune = %q; want only b", got)
	}

	if err := os.RemoveAll(filepath.Join(c.root, "containers")); err != nil {
		t.Fatal(err)
	}
	c.must("image", "prune", "-a")
	if imgs := c.imagesJSON().Images; len(imgs) != 0 {
		t.Errorf("images after the last prune: %v; want none", imgs)
	}
	if blobs, layers := c.storeFiles("blobs/sha256"), c.storeFiles("layers"); len(blobs)+len(layers) != 0 {
		t.Errorf("store after removing every image keeps blobs %v and layers %v", blobs, layers)
	}
}

// pushTestImage serves an in-memory registry on 127.0.0.1 and pushes a
// two-layer test image to it; it returns the registry's host:port. A
// non-empty user makes the registry require basic auth as user:pass.
func pushTestImage(t *testing.T, repoTag, user, pass string) string {
	t.Helper()
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var pushOpts []remote.Option
	if user != "" {
		handler = requireBasicAuth(user, pass, handler)
		pushOpts = append(pushOpts, remote.WithAuth(&authn.Basic{Username: user, Password: pass}))
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := filepath.Join(t.TempDir(), "layout")
	if err := testimage.WriteLayout(dir, testimage.Options{Name: repoTag, Layers: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, pushOpts...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return host
}

func TestPullShowsPlainProgress(t *testing.T) {
	c := newCLI(t)
	host := pushTestImage(t, "test/busybox:v1", "", "")
	ref := host + "/test/busybox:v1"

	stdout, stderr, ok := c.run("pull", ref)
	if !ok {
		t.Fatalf("berth pull %s failed:\n%s", ref, stderr)
	}
	id := strings.TrimSpace(stdout)
	if !strings.HasPrefix(id, "sha256:") || len(id) != 71 {
		t.Errorf("pull stdout %q: want only the image id", stdout)
	}
	if strings.ContainsRune(stderr, '\x1b') {
		t.Errorf("progress to a pipe has escape sequences:\n%q", stderr)
	}
	wantLines := []string{"pulling " + ref, ": downloading ", ": done, ", "pulled " + ref + ": 2 layers, "}
	for _, want := range wantLines {
		if !strings.Contains(stderr, want) {
			t.Errorf("pull progress lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, ": done, "); n != 2 {
		t.Errorf("pull progress has %d layer done lines, want 2:\n%s", n, stderr)
	}
	list := c.imagesJSON()
	if len(list.Images) != 1 || list.Images[0].ID != id || len(list.Images[0].RepoTags) != 1 || list.Images[0].RepoTags[0] != ref {
		t.Errorf("images after pull: %+v; want %s tagged %s", list.Images, id, ref)
	}

	stdout, stderr, _ = c.run("pull", "-q", ref)
	if strings.TrimSpace(stdout) != id || stderr != "" {
		t.Errorf("pull -q: stdout %q stderr %q; want the id and nothing else", stdout, stderr)
	}

	_, stderr, ok = c.run("pull", host+"/test/missing:v1")
	if ok || !strings.Contains(stderr, host+"/test/missing:v1") || !strings.Contains(stderr, "check the name and tag") {
		t.Errorf("pull of a missing image: ok=%v stderr:\n%s\nwant an error naming it and a hint", ok, stderr)
	}
}

func requireBasicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="berth-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestPullCredentials(t *testing.T) {
	c := newCLI(t)
	host := pushTestImage(t, "private/busybox:v1", "alice", "s3cret")
	ref := host + "/private/busybox:v1"

	_, stderr, ok := c.run("pull", "-q", ref)
	if ok || !strings.Contains(stderr, ref) || !strings.Contains(stderr, "--creds") {
		t.Errorf("pull without credentials: ok=%v stderr:\n%s\nwant a refusal naming the image and --creds", ok, stderr)
	}
	if _, stderr, ok := c.run("pull", "-q", "--creds", "alice:wrong", ref); ok {
		t.Errorf("pull with a wrong password succeeded:\n%s", stderr)
	}
	if out := c.must("pull", "-q", "--creds", "alice:s3cret", ref); !strings.HasPrefix(out, "sha256:") {
		t.Errorf("pull --creds: stdout %q; want the image id", out)
	}

	c.must("rmi", ref)
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	writeFile(t, filepath.Join(c.dockerCfg, "config.json"), fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))
	if out := c.must("pull", "-q", ref); !strings.HasPrefix(out, "sha256:") {
		t.Errorf("pull with config.json credentials: stdout %q; want the image id", out)
	}
}
