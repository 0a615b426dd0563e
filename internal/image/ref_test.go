package image

import (
	"errors"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestNormalizeRef(t *testing.T) {
	d := DefaultDomain
	hex := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct{ in, want string }{
		{"busybox", d + "/library/busybox:latest"},
		{"busybox:1.36", d + "/library/busybox:1.36"},
		{"library/busybox", d + "/library/busybox:latest"},
		{d + "/library/busybox:latest", d + "/library/busybox:latest"},
		{d + "/busybox", d + "/library/busybox:latest"},
		{"someone/app:v1", d + "/someone/app:v1"},
		{"localhost:5000/x", "localhost:5000/x:latest"},
		{"localhost/x:1", "localhost/x:1"},
		{"registry.example.test:443/a/b/c:t", "registry.example.test:443/a/b/c:t"},
		{"busybox@sha256:" + hex, d + "/library/busybox@sha256:" + hex},
		{"busybox:1@sha256:" + hex, d + "/library/busybox@sha256:" + hex},
	}
	for _, c := range cases {
		got, err := NormalizeRef(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeRef(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestNormalizeRefRejectsInvalid(t *testing.T) {
	for _, in := range []string{"", " busybox", "Busybox", "busybox:", "a b", "busybox@sha256:short", "busybox@md5:0123", "x:y:z"} {
		if got, err := NormalizeRef(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("NormalizeRef(%q) = %q, %v; want ErrInvalidArgument", in, got, err)
		}
	}
}

func testRecords() map[string]record {
	d := DefaultDomain
	a := "aaaa000000000000000000000000000000000000000000000000000000000001"
	b := "aaab000000000000000000000000000000000000000000000000000000000002"
	c := "cccc000000000000000000000000000000000000000000000000000000000003"
	man := "ffff000000000000000000000000000000000000000000000000000000000000"
	return map[string]record{
		a: {Image: Image{ID: "sha256:" + a, RepoTags: []string{d + "/library/busybox:latest"},
			RepoDigests: []string{d + "/library/busybox@sha256:" + man}}},
		b: {Image: Image{ID: "sha256:" + b, RepoTags: []string{"localhost:5000/app:v1"}}},
		c: {Image: Image{ID: "sha256:" + c}},
	}
}

func TestResolveRules(t *testing.T) {
	recs := testRecords()
	a := "aaaa000000000000000000000000000000000000000000000000000000000001"
	b := "aaab000000000000000000000000000000000000000000000000000000000002"
	c := "cccc000000000000000000000000000000000000000000000000000000000003"
	cases := map[string]string{
		"sha256:" + a:    a,
		a:                a,
		"busybox":        a,
		"busybox:latest": a,
		DefaultDomain + "/library/busybox:latest":                                         a,
		"busybox@sha256:ffff000000000000000000000000000000000000000000000000000000000000": a,
		"localhost:5000/app:v1": b,
		"aaab":                  b,
		"sha256:aaab":           b,
		"cc":                    c,
	}
	for ref, want := range cases {
		got, err := resolveIn(recs, ref)
		if err != nil || got != want {
			t.Errorf("resolve %q = %q, %v; want %q", ref, got, err, want)
		}
	}
}

func TestResolveFailures(t *testing.T) {
	recs := testRecords()
	cases := map[string]error{
		"busybox:other":      errdefs.ErrNotFound,
		"localhost:5000/app": errdefs.ErrNotFound, // tag latest is not v1
		"dddd":               errdefs.ErrNotFound,
		"aaa":                errdefs.ErrInvalidArgument, // ambiguous prefix
		"Not A Ref":          errdefs.ErrInvalidArgument,
		"busybox@sha256:" + "0000000000000000000000000000000000000000000000000000000000000000": errdefs.ErrNotFound,
	}
	for ref, want := range cases {
		if got, err := resolveIn(recs, ref); !errors.Is(err, want) {
			t.Errorf("resolve %q = %q, %v; want %v", ref, got, err, want)
		}
	}
	_, err := resolveIn(recs, "nothere")
	if err == nil || !strings.Contains(err.Error(), "nothere") {
		t.Errorf("not-found error %v does not name the reference", err)
	}
}
