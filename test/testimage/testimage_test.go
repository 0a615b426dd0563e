package testimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestIDIsDeterministicAndDependsOnOptions(t *testing.T) {
	a, err := ID(Options{Name: "busybox", Cmd: []string{"sleep", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ID(Options{Name: "busybox", Cmd: []string{"sleep", "1"}})
	c, _ := ID(Options{Name: "busybox", Cmd: []string{"sleep", "2"}})
	if a != b {
		t.Fatalf("same options gave %s and %s", a, b)
	}
	if a == c {
		t.Fatalf("different Cmd gave the same id %s", a)
	}
}

func TestLayoutHasTaggedManifestsAndLayers(t *testing.T) {
	dir := t.TempDir()
	err := WriteLayout(dir, Options{Name: "one", Layers: 3}, Options{Name: "two", ExtraFiles: map[string]string{"/etc/motd": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	readJSON(t, filepath.Join(dir, "index.json"), &idx)
	if len(idx.Manifests) != 2 || idx.Manifests[0].Annotations[ocispec.AnnotationRefName] != "one" {
		t.Fatalf("index manifests: %+v", idx.Manifests)
	}
	wantLayers := []int{3, 2}
	for i, d := range idx.Manifests {
		var m ocispec.Manifest
		readJSON(t, filepath.Join(dir, "blobs/sha256", d.Digest.Encoded()), &m)
		if len(m.Layers) != wantLayers[i] {
			t.Fatalf("image %d: %d layers, want %d", i, len(m.Layers), wantLayers[i])
		}
	}
}

func TestDockerArchiveContainsBusyboxAndPasswd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteDockerArchive(p, Options{Name: "busybox:latest"}); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, p)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	layer := readTarBytes(t, files[manifest[0].Layers[0]])
	if !bytes.Contains(layer["etc/passwd"], []byte("berth:x:1000:1000")) {
		t.Fatalf("etc/passwd: %q", layer["etc/passwd"])
	}
	if _, ok := layer["bin/busybox"]; !ok {
		t.Fatal("bin/busybox missing from layer")
	}
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func readTar(t *testing.T, p string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return readTarBytes(t, data)
}

func readTarBytes(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[hdr.Name] = b
	}
}

func TestExtraScriptsAndBinariesAreExecutable(t *testing.T) {
	files := map[string]string{"/etc/motd": "hi", "/run.sh": "#!/bin/sh\n", "/pause": "\x7fELF\x02\x01\x01"}
	modes := map[string]int64{}
	for _, e := range extraEntries(files, nil) {
		modes[e.hdr.Name] = e.hdr.Mode
	}
	for name, want := range map[string]int64{"etc/motd": 0o644, "run.sh": 0o755, "pause": 0o755} {
		if modes[name] != want {
			t.Errorf("%s: mode %o; want %o (entries %v)", name, modes[name], want, modes)
		}
	}
}

// A Bare image holds its ExtraFiles only: no busybox, no shell.
func TestBareImageHoldsOnlyItsFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteDockerArchive(p, Options{Name: "bare:1", Bare: true, ExtraFiles: map[string]string{"/pause": "\x7fELF", "/data/x": "x"}}); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, p)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest.json: %v %s; want one image of one layer", err, files["manifest.json"])
	}
	var names []string
	for name := range readTarBytes(t, files[manifest[0].Layers[0]]) {
		if !strings.HasSuffix(name, "/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "data/x pause" {
		t.Errorf("the layer holds %v; want data/x and pause only", names)
	}
}

func TestSymlinksGetTheirParents(t *testing.T) {
	got := map[string]string{}
	for _, e := range symlinkEntries(map[string]string{"/data/out": "../../..", "abs": "/etc"}, nil) {
		got[e.hdr.Name] = fmt.Sprintf("%c %s", e.hdr.Typeflag, e.hdr.Linkname)
	}
	want := map[string]string{"abs": "2 /etc", "data/": "5 ", "data/out": "2 ../../.."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q; want %q", got, want)
	}
}
