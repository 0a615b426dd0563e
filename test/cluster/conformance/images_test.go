package conformance

import (
	"archive/tar"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// fakePrograms stands small files in for the programs, and a host binary
// for curl and nc (only their shared libraries are looked up).
func fakePrograms(t *testing.T) Programs {
	t.Helper()
	dir := t.TempDir()
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	host := "/bin/ls" // dynamic on Debian, like curl and nc
	if _, err := os.Stat(host); err != nil {
		t.Skip("no /bin/ls to stand in for curl and nc")
	}
	return Programs{Agnhost: write("agnhost"), Pause: write("pause"), NoNewPrivs: write("nnp"), Curl: host, Netcat: host, Bash: host}
}

// layerEntries reads a layer's tar: name → header and content.
func layerEntries(t *testing.T, l v1.Layer) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		hdrs[name], data[name] = h, b
	}
}

func topLayer(t *testing.T, img v1.Image) v1.Layer {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers = %d, %v; want the base and one of the image's own", len(layers), err)
	}
	return layers[1]
}

func TestBuildAll(t *testing.T) {
	images, err := BuildAll(fakePrograms(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range Images() {
		for _, name := range im.Names {
			img := images[name]
			if img == nil {
				t.Fatalf("%s not built", name)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			hdrs, _ := layerEntries(t, topLayer(t, img))
			if h := hdrs["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "bash" || hdrs["bin/bash"] == nil {
				t.Errorf("%s: /bin/sh is %+v, want a link to /bin/bash", name, h)
			}
			if cf.OS != "linux" || strings.Join(cf.Config.Entrypoint, " ") != strings.Join(im.Config.Entrypoint, " ") || cf.Config.User != im.Config.User {
				t.Errorf("%s: config %+v, want %+v", name, cf.Config, im.Config)
			}
		}
	}
	hdrs, data := layerEntries(t, topLayer(t, images[e2eRepo+"nonewprivs:1.4"]))
	if h := hdrs["usr/local/bin/nnp"]; h == nil || h.Mode&0o4000 == 0 {
		t.Errorf("nnp is not set-uid: %+v", h)
	}
	if string(data["usr/local/bin/nnp"]) != "#!/bin/sh\necho nnp\n" {
		t.Errorf("nnp = %q", data["usr/local/bin/nnp"])
	}
}

func TestAgnhostImage(t *testing.T) {
	images, err := BuildAll(fakePrograms(t))
	if err != nil {
		t.Fatal(err)
	}
	hdrs, data := layerEntries(t, topLayer(t, images[e2eRepo+"agnhost:2.66.1"]))
	if h := hdrs["agnhost"]; h == nil || h.Mode&0o111 == 0 || string(data["agnhost"]) != "#!/bin/sh\necho agnhost\n" {
		t.Errorf("/agnhost = %+v", h)
	}
	if h := hdrs["agnhost-2"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "agnhost" {
		t.Errorf("/agnhost-2 = %+v, want a link to agnhost", h)
	}
	if _, err := tls.X509KeyPair(data["localhost.crt"], data["localhost.key"]); err != nil {
		t.Errorf("/localhost.crt and .key are no key pair: %v", err)
	}
	for _, p := range []string{"usr/bin/curl", "usr/bin/nc", "uploads"} {
		if hdrs[p] == nil {
			t.Errorf("/%s missing", p)
		}
	}
	if !strings.Contains(string(data["etc/group"]), "group-defined-in-image:x:50000:user-defined-in-image") {
		t.Errorf("/etc/group lacks the image's group:\n%s", data["etc/group"])
	}
	checkFakeRegistry(t, images[PauseName], data)
}

// checkFakeRegistry checks agnhost's /var/registry serves pause:testing as
// fake-registry-server reads it: the tag names the manifest's digest, and
// every file stored by digest hashes to it.
func checkFakeRegistry(t *testing.T, pause v1.Image, files map[string][]byte) {
	t.Helper()
	digest, err := pause.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["var/registry/pause/manifests/testing"]); got != digest.String() {
		t.Errorf("tag testing names %q, want the pause image's %s", got, digest)
	}
	m, err := pause.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1.Hash{digestPath("var/registry/pause/manifests", digest): digest,
		digestPath("var/registry/pause/blobs", m.Config.Digest): m.Config.Digest}
	for _, l := range m.Layers {
		want[digestPath("var/registry/pause/blobs", l.Digest)] = l.Digest
	}
	for p, d := range want {
		sum := sha256.Sum256(files[p])
		if files[p] == nil || d.Hex != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: missing or not %s", p, d)
		}
	}
}

func TestAgnhostImageNeedsNetcat(t *testing.T) {
	p := fakePrograms(t)
	p.Netcat = ""
	if _, err := BuildAll(p); err == nil || !strings.Contains(err.Error(), "usr/bin/nc") {
		t.Errorf("error = %v, want one naming /usr/bin/nc", err)
	}
}
