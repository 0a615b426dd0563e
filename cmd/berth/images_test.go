package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
)

func hexID(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// fakeImages is a store listing: a tagged image with two tags, one pulled
// by digest only, an untagged one, and one on a registry with a port.
func fakeImages() []image.Image {
	return []image.Image{
		{ID: hexID('a'), Size: 2_234_567, Layers: make([]image.Layer, 2),
			RepoTags:    []string{"berth.test/library/busybox:latest", "berth.test/library/busybox:1.36"},
			RepoDigests: []string{"berth.test/library/busybox@" + hexID('d')}},
		{ID: hexID('b'), Size: 723_000, RepoDigests: []string{"127.0.0.1:5000/app@" + hexID('e')}},
		{ID: hexID('c'), Size: 0},
		{ID: hexID('f'), Size: 105_000_000, RepoTags: []string{"127.0.0.1:5000/tools/x:v1"}},
	}
}

func render(t *testing.T, lo listOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := writeImages(&out, fakeImages(), lo); err != nil {
		t.Fatalf("writeImages(%+v): %v", lo, err)
	}
	return out.String()
}

func TestImagesTable(t *testing.T) {
	want := `IMAGE                        TAG      IMAGE ID        SIZE
127.0.0.1:5000/app           <none>   bbbbbbbbbbbbb   723kB
127.0.0.1:5000/tools/x       v1       fffffffffffff   105MB
<none>                       <none>   ccccccccccccc   0B
berth.test/library/busybox   1.36     aaaaaaaaaaaaa   2.23MB
berth.test/library/busybox   latest   aaaaaaaaaaaaa   2.23MB
`
	if got := render(t, listOptions{output: "table"}); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestImagesTableDigestsAndNoTrunc(t *testing.T) {
	got := render(t, listOptions{digests: true})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if !strings.HasPrefix(lines[0], "IMAGE") || strings.Join(strings.Fields(lines[0]), " ") != "IMAGE TAG DIGEST IMAGE ID SIZE" {
		t.Errorf("header %q: want IMAGE TAG DIGEST IMAGE ID SIZE", lines[0])
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[2] != "eeeeeeeeeeeee" {
		t.Errorf("row %q: want the repo digest, cut to 13 hex digits, in column 3", lines[1])
	}
	full := render(t, listOptions{noTrunc: true})
	if !strings.Contains(full, hexID('f')) {
		t.Errorf("--no-trunc output lacks the full id %s:\n%s", hexID('f'), full)
	}
}

func TestImagesQuietPrintsIDsOnly(t *testing.T) {
	got := render(t, listOptions{quiet: true, output: "json"})
	want := hexID('a') + "\n" + hexID('b') + "\n" + hexID('c') + "\n" + hexID('f') + "\n"
	if got != want {
		t.Errorf("-q:\n%s\nwant:\n%s", got, want)
	}
}

func TestImagesJSON(t *testing.T) {
	var list imageList
	if err := json.Unmarshal([]byte(render(t, listOptions{output: "json"})), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Images) != 4 {
		t.Fatalf("json lists %d images, want 4", len(list.Images))
	}
	a := list.Images[0]
	if a.ID != hexID('a') || len(a.RepoTags) != 2 || a.Size != 2_234_567 || a.Layers != 2 {
		t.Errorf("first image %+v", a)
	}
	if c := list.Images[2]; c.RepoTags == nil || c.RepoDigests == nil {
		t.Errorf("untagged image %+v: want empty lists, not null", c)
	}
}

func TestImagesYAML(t *testing.T) {
	got := render(t, listOptions{output: "yaml"})
	want := `images:
- id: "sha256:` + strings.Repeat("a", 64) + `"
  repoTags:
  - "berth.test/library/busybox:latest"
  - "berth.test/library/busybox:1.36"
  repoDigests:
  - "berth.test/library/busybox@sha256:` + strings.Repeat("d", 64) + `"
  size: 2234567
  layers: 2
`
	if !strings.HasPrefix(got, want) {
		t.Errorf("yaml starts:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(got, "- id: \"sha256:"+strings.Repeat("c", 64)+"\"\n  repoTags: []\n  repoDigests: []\n  size: 0\n") {
		t.Errorf("yaml of the untagged image lacks empty lists:\n%s", got)
	}
	var empty bytes.Buffer
	if err := writeImages(&empty, nil, listOptions{output: "yaml"}); err != nil || empty.String() != "images: []\n" {
		t.Errorf("yaml of no images = %q, %v; want \"images: []\\n\"", empty.String(), err)
	}
}

func TestImagesUnknownFormat(t *testing.T) {
	err := writeImages(&bytes.Buffer{}, fakeImages(), listOptions{output: "xml"})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "xml") {
		t.Errorf("-o xml: %v; want InvalidArgument naming the format", err)
	}
}

func TestSplitRepoTag(t *testing.T) {
	for in, want := range map[string][2]string{
		"berth.test/library/busybox:latest": {"berth.test/library/busybox", "latest"},
		"127.0.0.1:5000/app:v1":             {"127.0.0.1:5000/app", "v1"},
		"127.0.0.1:5000/app":                {"127.0.0.1:5000/app", "<none>"},
	} {
		if repo, tag := splitRepoTag(in); repo != want[0] || tag != want[1] {
			t.Errorf("splitRepoTag(%q) = %q, %q; want %q", in, repo, tag, want)
		}
	}
}

func TestPruneCandidates(t *testing.T) {
	users := imageUsers{hexID('b'): {"ctr1"}}
	ids := func(imgs []image.Image) string {
		var s []string
		for _, img := range imgs {
			s = append(s, img.ID[7:8])
		}
		return strings.Join(s, "")
	}
	remove, tagged := pruneCandidates(fakeImages(), users, false)
	if ids(remove) != "c" || tagged != 2 {
		t.Errorf("prune: removes %q with %d tagged unused; want only the untagged unused c, 2 tagged", ids(remove), tagged)
	}
	remove, _ = pruneCandidates(fakeImages(), users, true)
	if ids(remove) != "acf" {
		t.Errorf("prune -a: removes %q; want every image but b, which ctr1 uses", ids(remove))
	}
}

// The [images] defaults of the config file are the store's own defaults.
func TestImageLimitsDefaultsAgree(t *testing.T) {
	if got := imageLimits(config.Default()); got != image.DefaultLimits {
		t.Errorf("limits from the default config = %+v, image.DefaultLimits = %+v", got, image.DefaultLimits)
	}
}
