package registry

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func mustRegistry(t *testing.T, host string) name.Registry {
	t.Helper()
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// usernameOf returns the user name an authenticator sends ("" anonymous).
func usernameOf(t *testing.T, a authn.Authenticator) string {
	t.Helper()
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Username
}

func TestExplicitCredentialsGoToTheUpstreamOnly(t *testing.T) {
	up := mustRegistry(t, "reg.example")
	creds := &Credentials{Username: "alice", Password: "secret"}
	for _, tc := range []struct {
		name string
		ep   Endpoint
		addr string
		want string
	}{
		{"mirror", Endpoint{Host: "mirror.example", Mirror: true}, "", ""},
		{"upstream", Endpoint{Host: "reg.example"}, "", "alice"},
		{"upstream served elsewhere", Endpoint{Host: "127.0.0.1:5000"}, "", "alice"},
		{"bound to the registry", Endpoint{Host: "127.0.0.1:5000"}, "reg.example", "alice"},
		{"bound with scheme and path", Endpoint{Host: "reg.example"}, "https://reg.example/v1/", "alice"},
		{"bound to the endpoint", Endpoint{Host: "127.0.0.1:5000"}, "http://127.0.0.1:5000", "alice"},
		{"bound to another host", Endpoint{Host: "reg.example"}, "other.example", ""},
		{"bound to another port", Endpoint{Host: "reg.example"}, "reg.example:8443", ""},
		{"bound to the registry, sent to a mirror", Endpoint{Host: "reg.example", Mirror: true}, "reg.example", ""},
	} {
		c := *creds
		c.ServerAddress = tc.addr
		a, err := authenticator(context.Background(), Options{Credentials: &c}, tc.ep, up.Repo("app"))
		if err != nil {
			t.Fatal(err)
		}
		if got := usernameOf(t, a); got != tc.want {
			t.Errorf("%s: sends user %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDefaultRegistryServerAddresses(t *testing.T) {
	up := mustRegistry(t, name.DefaultRegistry)
	for _, addr := range []string{"https://" + name.DefaultRegistry + "/v1/", "docker.io"} {
		if !serverAddressAllows(addr, name.DefaultRegistry, up) {
			t.Errorf("server address %q refused for the default registry", addr)
		}
	}
}

func TestMirrorGetsOnlyItsOwnKeychainEntry(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	writeConfig := func(content string) {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	up := mustRegistry(t, "reg.example")
	mirror := Endpoint{Host: "mirror.example", Mirror: true}
	opts := Options{UseKeychain: true}

	writeConfig(`{"auths":{"reg.example":{"auth":"dXA6dXBwdw=="}}}`) // up:uppw
	a, err := authenticator(context.Background(), opts, mirror, up.Repo("app"))
	if err != nil {
		t.Fatal(err)
	}
	if got := usernameOf(t, a); got != "" {
		t.Errorf("mirror gets the upstream's entry (user %q)", got)
	}
	a, err = authenticator(context.Background(), opts, Endpoint{Host: "127.0.0.1:5000"}, up.Repo("app"))
	if err != nil {
		t.Fatal(err)
	}
	if got := usernameOf(t, a); got != "up" {
		t.Errorf("upstream endpoint: user %q, want the registry's entry", got)
	}

	writeConfig(`{"auths":{"reg.example":{"auth":"dXA6dXBwdw=="},"mirror.example":{"auth":"bWk6bWlwdw=="}}}`) // mi:mipw
	a, err = authenticator(context.Background(), opts, mirror, up.Repo("app"))
	if err != nil {
		t.Fatal(err)
	}
	if got := usernameOf(t, a); got != "mi" {
		t.Errorf("mirror: user %q, want its own entry", got)
	}
}
