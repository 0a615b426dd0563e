package registry

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

// fuzzAPIHosts are the registry hosts a hosts.toml is parsed for: a
// reference's host is validated before it gets here, so the fuzzer picks
// one of these rather than inventing one.
var fuzzAPIHosts = []string{"registry.example", "127.0.0.1:5000", "[::1]:5000", "localhost", "10.0.0.1:443"}

// FuzzParseHosts feeds arbitrary hosts.toml files to the parser. A file it
// refuses is refused as invalid input; a file it accepts yields mirrors in
// order and then the upstream, each an http(s) endpoint whose request URL
// (scheme, host, API path, as the transport builds it) parses back to the
// same parts with no user info, query or fragment.
func FuzzParseHosts(f *testing.F) {
	for _, seed := range []string{
		"",
		`server = "https://up.example"` + "\n",
		"server = \"https://up.example\"\nca = \"/etc/ca.pem\"\n[host.\"http://m2.example:5000\"]\n  capabilities = [\"pull\"]\n" +
			"[host.\"https://m1.example/prefix\"]\n  skip_verify = true\n[host.\"https://m3.example/custom\"]\n  override_path = true\n" +
			"  [host.\"https://m3.example/custom\".rewrite]\n    \"^library/(.*)$\" = \"hub/$1\"\n",
		"[host.\"http://127.0.0.1:5001/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = [\"/a.pem\", \"/b.pem\"]\n",
		"server = \"http://[::1]:5000\"\nskip_verify = true\n[rewrite]\n\"(.*)\" = \"${1}\"\n",
		"[host.\"https://user:pw@m.example\"]\n",
		"[host.\"https://m.example/?q=1#frag\"]\n",
		"[host.\"ftp://m.example\"]\n",
		"[host.\"https://m.example\"]\ncapabilities = [\"push\", \"delete\"]\n",
		"[host.\"https://m.example\".rewrite]\n\"(\" = \"x\"\n",
		"mirrors = 1\n",
		"server = 1\n",
		"ca = 1\n",
	} {
		f.Add(seed, uint8(0), false)
		f.Add(seed, uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, data string, hostIndex uint8, isDefault bool) {
		apiHost := fuzzAPIHosts[int(hostIndex)%len(fuzzAPIHosts)]
		eps, err := parseHosts([]byte(data), apiHost, isDefault)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("refused without ErrInvalidArgument: %v", err)
			}
			return
		}
		if len(eps) == 0 {
			t.Fatal("no endpoints, not even the upstream")
		}
		for i, ep := range eps {
			if want := i < len(eps)-1; ep.Mirror != want {
				t.Errorf("endpoint %d (%s): Mirror = %v, want %v (mirrors first, upstream last)", i, ep.URL(), ep.Mirror, want)
			}
			checkEndpointURL(t, ep)
			applyRewrites(ep.Rewrites, "library/busybox")
		}
		if up := eps[len(eps)-1]; isDefault && up.Host != apiHost {
			t.Errorf("_default: upstream host %q, want the registry's own %q", up.Host, apiHost)
		}
	})
}

// checkEndpointURL checks that ep's request URL is a well-formed http(s)
// URL that round-trips through url.Parse.
func checkEndpointURL(t *testing.T, ep Endpoint) {
	t.Helper()
	if ep.Scheme != "http" && ep.Scheme != "https" {
		t.Fatalf("endpoint %q: scheme %q", ep.URL(), ep.Scheme)
	}
	if ep.Host == "" || strings.ContainsAny(ep.Host, "/?#@") {
		t.Fatalf("endpoint %q: host %q", ep.URL(), ep.Host)
	}
	if ep.APIPath != "" && !strings.HasPrefix(ep.APIPath, "/") {
		t.Fatalf("endpoint %q: API path %q is not absolute", ep.URL(), ep.APIPath)
	}
	built := (&url.URL{Scheme: ep.Scheme, Host: ep.Host, Path: ep.APIPath}).String()
	u, err := url.Parse(built)
	if err != nil {
		t.Fatalf("endpoint %q: request URL %q does not parse: %v", ep.URL(), built, err)
	}
	if u.Scheme != ep.Scheme || u.Host != ep.Host || u.Path != ep.APIPath || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		t.Fatalf("endpoint %q: request URL %q parses to %#v", ep.URL(), built, u)
	}
}
