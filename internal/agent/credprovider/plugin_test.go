package credprovider

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakePlugin is a shell script that appends its args and request to
// $CALLS and prints $RESPONSE_FILE.
const fakePlugin = `#!/bin/sh
req=$(cat)
printf '%s|%s|%s\n' "$*" "$EXTRA" "$req" >> "$CALLS"
cat "$RESPONSE_FILE"
`

type fixture struct {
	dir, calls, response, config string
}

func newFixture(t *testing.T, providerYAML string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, calls: filepath.Join(dir, "calls"), response: filepath.Join(dir, "response.json"), config: filepath.Join(dir, "config.yaml")}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "fake"), []byte(fakePlugin), 0o700); err != nil {
		t.Fatal(err)
	}
	providerYAML = strings.NewReplacer("$CALLS", f.calls, "$RESPONSE_FILE", f.response).Replace(providerYAML)
	if err := os.WriteFile(f.config, []byte(providerYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) answer(t *testing.T, body string) {
	t.Helper()
	if err := os.WriteFile(f.response, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) runs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.calls)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

const fakeConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: fake
  matchImages: ["*.registry.example", "registry.example:5000/team"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [get-credentials, --verbose]
  env:
  - {name: CALLS, value: "$CALLS"}
  - {name: RESPONSE_FILE, value: "$RESPONSE_FILE"}
  - {name: EXTRA, value: from-config}
`

func answerJSON(keyType, duration string) string {
	resp := map[string]any{
		"kind": "CredentialProviderResponse", "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
		"cacheKeyType": keyType,
		"auth": map[string]any{
			"*.registry.example":         map[string]string{"username": "glob", "password": "pw1"},
			"registry.example:5000/team": map[string]string{"username": "team", "password": "pw2"},
		},
	}
	if duration != "" {
		resp["cacheDuration"] = duration
	}
	b, _ := json.Marshal(resp)
	return string(b)
}

func load(t *testing.T, f *fixture) *Providers {
	t.Helper()
	p, err := Load(f.config, filepath.Join(f.dir, "bin"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func users(p *Providers, image string) string {
	var out []string
	for _, c := range p.Lookup(context.Background(), image) {
		out = append(out, c.Username)
	}
	return strings.Join(out, ",")
}

// TestPluginProtocol: the plugin runs with its args and env, gets a
// CredentialProviderRequest for the image's repository on stdin, and its
// answer's entries are matched to the image; images its matchImages do
// not match never run it.
func TestPluginProtocol(t *testing.T) {
	f := newFixture(t, fakeConfig)
	f.answer(t, answerJSON("Image", "0s"))
	p := load(t, f)
	if got := users(p, "a.registry.example/app:v1"); got != "glob" {
		t.Errorf("a.registry.example/app: users %q, want glob", got)
	}
	if got := users(p, "registry.example:5000/team/app@sha256:"+strings.Repeat("b", 64)); got != "team" {
		t.Errorf("registry.example:5000/team/app: users %q, want team", got)
	}
	if got := users(p, "registry.example:5000/other/app"); got != "" {
		t.Errorf("an image matchImages does not match: users %q", got)
	}
	runs := f.runs(t)
	if len(runs) != 2 {
		t.Fatalf("plugin ran %d times (%q), want 2", len(runs), runs)
	}
	parts := strings.SplitN(runs[0], "|", 3)
	if len(parts) != 3 {
		t.Fatalf("plugin run %q: want args|env|request", runs[0])
	}
	args, extra, req := parts[0], parts[1], parts[2]
	if args != "get-credentials --verbose" || extra != "from-config" {
		t.Errorf("plugin args %q, env EXTRA %q; want the configured ones", args, extra)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(req), &got); err != nil {
		t.Fatalf("request %q: %v", req, err)
	}
	if got["kind"] != "CredentialProviderRequest" || got["apiVersion"] != ProtocolAPIVersion || got["image"] != "a.registry.example/app" {
		t.Errorf("request %v, want a CredentialProviderRequest v1 for a.registry.example/app", got)
	}
}

// TestPluginCache: answers are kept per image, per registry or globally,
// for cacheDuration or else defaultCacheDuration, and asked again once
// they expire; a zero duration is not cached.
func TestPluginCache(t *testing.T) {
	for _, c := range []struct {
		keyType, duration string
		wantRuns          int // after a.registry.example/app twice, a.registry.example/other, b.registry.example/app
	}{
		{"Image", "", 3},
		{"Registry", "", 2},
		{"Global", "", 1},
		{"Global", "0s", 4},
		{"Registry", "1h", 2},
	} {
		f := newFixture(t, fakeConfig)
		f.answer(t, answerJSON(c.keyType, c.duration))
		p := load(t, f)
		clock := time.Unix(1e9, 0)
		p.now = func() time.Time { return clock }
		for _, image := range []string{"a.registry.example/app", "a.registry.example/app:v2", "a.registry.example/other", "b.registry.example/app"} {
			if got := users(p, image); got != "glob" {
				t.Errorf("%s %s: %s: users %q, want glob", c.keyType, c.duration, image, got)
			}
		}
		if got := len(f.runs(t)); got != c.wantRuns {
			t.Errorf("cacheKeyType %s cacheDuration %q: %d runs, want %d", c.keyType, c.duration, got, c.wantRuns)
		}
		before := len(f.runs(t))
		clock = clock.Add(2 * time.Hour)
		users(p, "a.registry.example/app")
		if got := len(f.runs(t)); got != before+1 {
			t.Errorf("cacheKeyType %s cacheDuration %q: the expired answer is used (%d runs, want %d)", c.keyType, c.duration, got, before+1)
		}
	}
}

// TestPluginBadAnswers: an answer of the wrong kind or version, an unknown
// cacheKeyType, no JSON or a failing plugin give no credentials.
func TestPluginBadAnswers(t *testing.T) {
	f := newFixture(t, fakeConfig)
	p := load(t, f)
	for _, body := range []string{
		`not json`,
		`{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","cacheKeyType":"Image","auth":{"*.registry.example":{"username":"u","password":"p"}}}`,
		`{"kind":"Other","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image","auth":{"*.registry.example":{"username":"u","password":"p"}}}`,
		`{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Pod","auth":{"*.registry.example":{"username":"u","password":"p"}}}`,
		`{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image","cacheDuration":"-1m","auth":{"*.registry.example":{"username":"u","password":"p"}}}`,
	} {
		f.answer(t, body)
		if got := users(p, "a.registry.example/app"); got != "" {
			t.Errorf("answer %s: users %q, want none", body, got)
		}
	}
	if err := os.Remove(f.response); err != nil { // cat fails: exit status 1
		t.Fatal(err)
	}
	if got := users(p, "a.registry.example/app"); got != "" {
		t.Errorf("a failing plugin: users %q, want none", got)
	}
}

func TestConfigRefused(t *testing.T) {
	good := fakeConfig
	for _, c := range []struct{ what, config, want string }{
		{"wrong kind", strings.Replace(good, "kind: CredentialProviderConfig", "kind: KubeletConfiguration", 1), "want CredentialProviderConfig"},
		{"unknown field", good + "  extra: 1\n", "unknown field"},
		{"name with a slash", strings.Replace(good, "name: fake", "name: ../fake", 1), `name "../fake"`},
		{"missing binary", strings.Replace(good, "name: fake", "name: absent", 1), "executable"},
		{"no matchImages", strings.Replace(good, `matchImages: ["*.registry.example", "registry.example:5000/team"]`, "matchImages: []", 1), "matchImages"},
		{"scheme in matchImages", strings.Replace(good, `"*.registry.example"`, `"https://registry.example"`, 1), "without a scheme"},
		{"no defaultCacheDuration", strings.Replace(good, "  defaultCacheDuration: 10m\n", "", 1), "defaultCacheDuration"},
		{"old protocol", strings.Replace(good, "apiVersion: credentialprovider.kubelet.k8s.io/v1", "apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1", 1), "berth speaks"},
		{"service account tokens", good + "  tokenAttributes: {serviceAccountTokenAudience: x, requireServiceAccount: true}\n", "tokenAttributes"},
		{"duplicate", good + strings.SplitN(good, "providers:\n", 2)[1], "duplicate"},
	} {
		f := newFixture(t, c.config)
		_, err := Load(f.config, filepath.Join(f.dir, "bin"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), f.config) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.what, err, f.config, c.want)
		}
	}
	f := newFixture(t, good)
	if _, err := Load(f.config, "", nil); err == nil || !strings.Contains(err.Error(), "--image-credential-provider-bin-dir") {
		t.Errorf("no bin dir: %v", err)
	}
}
