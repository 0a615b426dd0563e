package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/berth-dev/berth/internal/errdefs"
)

// defaultHostsDir holds hosts.toml files that apply to every registry
// without a directory of its own.
const defaultHostsDir = "_default"

// Endpoint is one place a registry's content can be fetched from.
type Endpoint struct {
	Scheme     string    // "http" or "https"
	Host       string    // host[:port] to connect to
	APIPath    string    // path that replaces "/v2" in requests ("/v2" unless configured)
	Mirror     bool      // false for the upstream (server)
	Resolve    bool      // may resolve tags to manifests
	Pull       bool      // may serve blobs and manifests by digest
	SkipVerify bool      // do not verify the TLS certificate
	CAFiles    []string  // extra root CAs, PEM files
	Rewrites   []Rewrite // repository rewrites, first match wins
}

// URL is the endpoint as written in a hosts file.
func (e Endpoint) URL() string { return e.Scheme + "://" + e.Host + e.APIPath }

// Rewrite replaces a repository path matching Pattern with Replacement
// (regexp.Expand syntax: $1, ${name}).
type Rewrite struct {
	Pattern     *regexp.Regexp
	Replacement string
}

// Apply returns repo rewritten by the first rewrite that matches it.
func applyRewrites(rewrites []Rewrite, repo string) string {
	for _, rw := range rewrites {
		if m := rw.Pattern.FindStringSubmatchIndex(repo); m != nil {
			return string(rw.Pattern.ExpandString(nil, rw.Replacement, repo, m))
		}
	}
	return repo
}

// hostsFile is the TOML of one hosts.toml. Top-level keys configure the
// upstream (server); [host."<url>"] tables configure mirrors, in order.
type hostsFile struct {
	Server       string               `toml:"server"`
	hostSettings                      // the server's own settings
	Host         map[string]hostTable `toml:"host"`
}

type hostTable struct {
	hostSettings
}

type hostSettings struct {
	Capabilities []string          `toml:"capabilities"`
	CA           stringList        `toml:"ca"`
	SkipVerify   bool              `toml:"skip_verify"`
	OverridePath bool              `toml:"override_path"`
	Rewrite      map[string]string `toml:"rewrite"`
}

// stringList decodes a TOML string or array of strings.
type stringList []string

func (l *stringList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*l = []string{v}
	case []any:
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return fmt.Errorf("array item %v: not a string", item)
			}
			*l = append(*l, s)
		}
	default:
		return fmt.Errorf("value %v: want a string or an array of strings", v)
	}
	return nil
}

// Endpoints returns where to fetch content of the registry host (as in the
// reference, e.g. "docker.io" or "127.0.0.1:5000"): the mirrors of its
// hosts.toml in file order, then the upstream. apiHost is the host the
// upstream is reached at when hosts.toml names no server (it differs from
// host only for the default registry).
func Endpoints(hostsDir, host, apiHost string) ([]Endpoint, error) {
	path, data, err := readHostsFile(hostsDir, host)
	if err != nil {
		return nil, err
	}
	if data == nil {
		up, err := defaultUpstream(apiHost, hostSettings{})
		return []Endpoint{up}, err
	}
	eps, err := parseHosts(data, apiHost, filepath.Base(filepath.Dir(path)) == defaultHostsDir)
	if err != nil {
		return nil, fmt.Errorf("registry hosts file %s: %w", path, err)
	}
	return eps, nil
}

// readHostsFile reads <dir>/<host>/hosts.toml, else <dir>/_default/hosts.toml.
// Neither existing is no configuration (nil data).
func readHostsFile(dir, host string) (string, []byte, error) {
	if dir == "" {
		return "", nil, nil
	}
	for _, name := range []string{host, defaultHostsDir} {
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			continue
		}
		path := filepath.Join(dir, name, "hosts.toml")
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("registry hosts file %s: %w: %w", path, err, errdefs.ErrUnavailable)
		}
		return path, data, nil
	}
	return "", nil, nil
}

// parseHosts decodes one hosts.toml. In _default, server is ignored: the
// upstream is always the registry's own host.
func parseHosts(data []byte, apiHost string, isDefault bool) ([]Endpoint, error) {
	var f hostsFile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, errdefs.ErrInvalidArgument)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("unknown key %q: %w", undecoded[0].String(), errdefs.ErrInvalidArgument)
	}
	var eps []Endpoint
	for _, raw := range hostOrder(md) {
		ep, err := newEndpoint(raw, f.Host[raw].hostSettings, true)
		if err != nil {
			return nil, fmt.Errorf("host %q: %w", raw, err)
		}
		eps = append(eps, ep)
	}
	if f.Server == "" || isDefault {
		up, err := defaultUpstream(apiHost, f.hostSettings)
		if err != nil {
			return nil, fmt.Errorf("server settings: %w", err)
		}
		return append(eps, up), nil
	}
	up, err := newEndpoint(f.Server, f.hostSettings, false)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", f.Server, err)
	}
	return append(eps, up), nil
}

// hostOrder lists the [host."<url>"] tables in the order they appear.
func hostOrder(md toml.MetaData) []string {
	var order []string
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "host" && !slices.Contains(order, k[1]) {
			order = append(order, k[1])
		}
	}
	return order
}

// defaultUpstream is https://<apiHost>, or http:// for a loopback registry
// whose TLS settings are not configured.
func defaultUpstream(apiHost string, hs hostSettings) (Endpoint, error) {
	scheme := "https"
	if IsLoopback(apiHost) && len(hs.CA) == 0 && !hs.SkipVerify {
		scheme = "http"
	}
	return newEndpoint(scheme+"://"+apiHost, hs, false)
}

func newEndpoint(raw string, hs hostSettings, mirror bool) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Endpoint{}, fmt.Errorf("want http://host[:port][/path] or https://...: %w", errdefs.ErrInvalidArgument)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Endpoint{}, fmt.Errorf("user info, query and fragment are not allowed: %w", errdefs.ErrInvalidArgument)
	}
	ep := Endpoint{Scheme: u.Scheme, Host: u.Host, Mirror: mirror, SkipVerify: hs.SkipVerify, CAFiles: hs.CA}
	ep.APIPath = apiPath(u.Path, hs.OverridePath)
	if ep.Resolve, ep.Pull, err = capabilities(hs.Capabilities); err != nil {
		return Endpoint{}, err
	}
	if ep.Rewrites, err = compileRewrites(hs.Rewrite); err != nil {
		return Endpoint{}, err
	}
	return ep, nil
}

// apiPath follows containerd: "/v2" is appended to the URL's path unless
// override_path is set or the path already ends in it.
func apiPath(p string, override bool) string {
	p = strings.TrimRight(p, "/")
	if override || strings.HasSuffix(p, "/v2") {
		return p
	}
	return p + "/v2"
}

func capabilities(caps []string) (resolve, pull bool, err error) {
	if caps == nil {
		return true, true, nil
	}
	for _, c := range caps {
		switch c {
		case "resolve":
			resolve = true
		case "pull":
			pull = true
		case "push":
		default:
			return false, false, fmt.Errorf("capability %q: want pull, resolve or push: %w", c, errdefs.ErrInvalidArgument)
		}
	}
	return resolve, pull, nil
}

// compileRewrites orders rewrites by pattern so the first match is stable.
func compileRewrites(m map[string]string) ([]Rewrite, error) {
	patterns := make([]string, 0, len(m))
	for p := range m {
		patterns = append(patterns, p)
	}
	slices.Sort(patterns)
	var out []Rewrite
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("rewrite %q: %v: %w", p, err, errdefs.ErrInvalidArgument)
		}
		out = append(out, Rewrite{Pattern: re, Replacement: m[p]})
	}
	return out, nil
}

// IsLoopback reports whether host[:port] names localhost or a loopback address.
func IsLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
