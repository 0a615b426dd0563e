package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	berthregistry "github.com/berth-dev/berth/internal/registry"
	"github.com/berth-dev/berth/test/registry"
)

// TestPushServesOriginalNames pushes the images into a local registry and
// resolves every original name through berth's registry client with the
// hosts.toml WriteHosts wrote: each resolves to the very image built.
func TestPushServesOriginalNames(t *testing.T) {
	if reason := registry.SkipReason(); reason != "" {
		t.Skip(reason)
	}
	images, err := BuildAll(fakePrograms(t))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.StartT(t, registry.Options{})
	if err := Push(reg, images); err != nil {
		t.Fatal(err)
	}
	hostsDir := t.TempDir()
	if err := WriteHosts(hostsDir, reg.Host); err != nil {
		t.Fatal(err)
	}
	client := berthregistry.New(hostsDir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ref, img := range images {
		want, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Resolve(ctx, r, berthregistry.Options{})
		if err != nil {
			t.Errorf("resolve %s: %v", ref, err)
			continue
		}
		if res.Digest != want.String() || res.Endpoint != "http://"+reg.Host+"/v2" {
			t.Errorf("%s resolved to %s at %s, want %s at http://%s/v2", ref, res.Digest, res.Endpoint, want, reg.Host)
		}
	}
}

func TestLocalName(t *testing.T) {
	got, err := localName("registry.k8s.io/e2e-test-images/agnhost:2.66.1")
	if err != nil || got != "e2e-test-images/agnhost:2.66.1" {
		t.Errorf("localName = %q, %v", got, err)
	}
	for _, bad := range []string{"docker.io/library/busybox:1", "registry.k8s.io", "registry.k8s.io/"} {
		if _, err := localName(bad); err == nil {
			t.Errorf("localName(%q) accepted an image the hosts.toml does not serve", bad)
		}
	}
}
