package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/test/testimage"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { must(t, removeTree(s.Root())) })
	return s
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// assertEmpty checks the store holds no blob, layer, record or staging.
func assertEmpty(t *testing.T, s *Store) {
	t.Helper()
	for _, d := range []string{s.blobDir(), s.layersDir(), s.indexDir(), s.tmpDir()} {
		names := slices.DeleteFunc(dirNames(t, d), func(n string) bool { return n[0] == '.' })
		if len(names) != 0 {
			t.Errorf("%s not empty: %v", d, names)
		}
	}
}

func TestImportAllFormats(t *testing.T) {
	s := openTestStore(t)
	tmp := t.TempDir()
	layoutOpts := testimage.Options{Name: "busybox", Layers: 2}
	ociOpts := testimage.Options{Name: "localhost:5000/app:v1", Cmd: []string{"sleep", "9"}, User: "berth",
		ExtraFiles: map[string]string{"/etc/motd": "hello"}}
	dockerOpts := testimage.Options{Name: "dockerimg:1", Layers: 3, Env: []string{"A=b"}}
	layout := filepath.Join(tmp, "layout")
	must(t, testimage.WriteLayout(layout, layoutOpts))
	ociTar := filepath.Join(tmp, "oci.tar")
	must(t, testimage.WriteOCIArchive(ociTar, ociOpts))
	dockerTar := filepath.Join(tmp, "docker.tar")
	must(t, testimage.WriteDockerArchive(dockerTar, dockerOpts))

	cases := []struct {
		path, tag string
		opts      testimage.Options
		layers    int
	}{
		{layout, DefaultDomain + "/library/busybox:latest", layoutOpts, 2},
		{ociTar, "localhost:5000/app:v1", ociOpts, 2},
		{dockerTar, DefaultDomain + "/library/dockerimg:1", dockerOpts, 3},
	}
	for _, c := range cases {
		imgs, err := s.Import(context.Background(), c.path)
		if err != nil {
			t.Fatalf("import %s: %v", c.path, err)
		}
		wantID, _ := testimage.ID(c.opts)
		if len(imgs) != 1 || imgs[0].ID != wantID || !slices.Equal(imgs[0].RepoTags, []string{c.tag}) {
			t.Fatalf("import %s: got %+v, want id %s tag %s", c.path, imgs, wantID, c.tag)
		}
		img := imgs[0]
		if len(img.Layers) != c.layers || len(img.RepoDigests) != 1 || img.Size <= 0 {
			t.Fatalf("import %s: layers %d digests %v size %d", c.path, len(img.Layers), img.RepoDigests, img.Size)
		}
		paths, err := s.LayerPaths(img)
		must(t, err)
		if fi, err := os.Stat(filepath.Join(paths[0], "bin/busybox")); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("import %s: bottom layer bin/busybox: %v %v", c.path, fi, err)
		}
		if got, err := s.Resolve(c.opts.Name); err != nil || got.ID != img.ID {
			t.Fatalf("resolve %q: %v %v", c.opts.Name, got.ID, err)
		}
	}
	app, _ := s.Resolve("localhost:5000/app:v1")
	if app.Config.Config.User != "berth" || !slices.Equal(app.Config.Config.Cmd, []string{"sleep", "9"}) {
		t.Errorf("app config: %+v", app.Config.Config)
	}
	paths, _ := s.LayerPaths(app)
	if data, err := os.ReadFile(filepath.Join(paths[len(paths)-1], "etc/motd")); err != nil || string(data) != "hello" {
		t.Errorf("top layer etc/motd: %q %v", data, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d images, %v", len(list), err)
	}
	if used, inodes, err := s.Usage(); err != nil || used == 0 || inodes == 0 {
		t.Errorf("usage: %d bytes %d inodes %v", used, inodes, err)
	}
	for _, img := range list {
		must(t, s.Remove(img.ID))
	}
	assertEmpty(t, s)
}

func TestReimportIsIdempotentAndTagsMove(t *testing.T) {
	s := openTestStore(t)
	tmp := t.TempDir()
	first := filepath.Join(tmp, "first")
	must(t, testimage.WriteLayout(first, testimage.Options{Name: "busybox"}))
	imgs1, err := s.Import(context.Background(), first)
	must(t, err)
	imgs2, err := s.Import(context.Background(), first)
	must(t, err)
	if imgs1[0].ID != imgs2[0].ID || !slices.Equal(imgs1[0].RepoTags, imgs2[0].RepoTags) {
		t.Fatalf("re-import changed the image: %+v vs %+v", imgs1[0], imgs2[0])
	}
	// A second process (another Store on the same root) sees changes.
	reader, err := Open(s.Root())
	must(t, err)
	if l, _ := reader.List(); len(l) != 1 {
		t.Fatalf("second store sees %d images", len(l))
	}
	second := filepath.Join(tmp, "second.tar")
	must(t, testimage.WriteDockerArchive(second, testimage.Options{Name: "busybox:latest", Cmd: []string{"true"}}))
	imgs3, err := s.Import(context.Background(), second)
	must(t, err)
	old, err := reader.Resolve(imgs1[0].ID)
	must(t, err)
	if len(old.RepoTags) != 0 || len(old.RepoDigests) != 0 {
		t.Errorf("old image kept tag: %v %v", old.RepoTags, old.RepoDigests)
	}
	if got, err := reader.Resolve("busybox"); err != nil || got.ID != imgs3[0].ID {
		t.Errorf("busybox resolves to %s (%v), want %s", got.ID, err, imgs3[0].ID)
	}
	// Both images share their only layer: removing one keeps it.
	must(t, s.Remove(imgs1[0].ID))
	paths, err := s.LayerPaths(imgs3[0])
	if err != nil || len(paths) != 1 {
		t.Fatalf("shared layer gone after removing the other image: %v", err)
	}
	if err := s.Remove(imgs1[0].ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("second remove: %v, want ErrNotFound", err)
	}
	must(t, reader.Remove("busybox"))
	assertEmpty(t, s)
}

func TestImportRejectsCorruptionLeavingNothing(t *testing.T) {
	tmp := t.TempDir()
	layout := filepath.Join(tmp, "layout")
	must(t, testimage.WriteLayout(layout, testimage.Options{Name: "busybox"}))
	// Flip one byte in the biggest blob (the layer).
	var biggest string
	var size int64
	blobs := filepath.Join(layout, "blobs/sha256")
	for _, n := range dirNames(t, blobs) {
		fi, _ := os.Stat(filepath.Join(blobs, n))
		if fi.Size() > size {
			biggest, size = filepath.Join(blobs, n), fi.Size()
		}
	}
	flipByte(t, biggest, size/2)
	s := openTestStore(t)
	if _, err := s.Import(context.Background(), layout); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("corrupt layout: %v, want ErrInvalidArgument", err)
	}
	assertEmpty(t, s)

	// A docker archive names layers by path only: the diff id catches it.
	dockerTar := filepath.Join(tmp, "docker.tar")
	must(t, testimage.WriteDockerArchive(dockerTar, testimage.Options{Name: "busybox"}))
	fi, _ := os.Stat(dockerTar)
	flipByte(t, dockerTar, fi.Size()/2)
	if _, err := s.Import(context.Background(), dockerTar); err == nil {
		t.Fatal("corrupt docker archive imported")
	}
	assertEmpty(t, s)
	if _, err := s.Resolve("busybox"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("resolve after failed import: %v", err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	must(t, err)
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	must(t, err)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
