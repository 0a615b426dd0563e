package dockerauth

import (
	"net"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Credential is one registry credential and where it came from.
type Credential struct {
	Username      string
	Password      string
	IdentityToken string // OAuth2 refresh token (config.json "identitytoken")
	RegistryToken string // bearer token sent as is (config.json "registrytoken")
	// Source names where the credential came from, for messages
	// (`secret "regcred"`, `file /etc/berth/auth.json`, `plugin "ecr"`).
	Source string
}

// String names the credential without its secret fields.
func (c Credential) String() string {
	if c.Username != "" {
		return c.Source + " (user " + c.Username + ")"
	}
	return c.Source
}

// Keyring holds credentials by key (host[:port][/path], host labels may be
// globs). The zero value is empty and ready to use; it is not safe for
// concurrent writes.
type Keyring struct {
	creds map[string][]Credential
	index []string // keys, most specific first
}

// Add files the credentials under their config keys ("https://host/v1/",
// "host:port/path", "*.example.com"). Keys that are not URLs are skipped
// and returned, so that the caller can report them.
func (k *Keyring) Add(entries map[string]Credential) (skipped []string) {
	if k.creds == nil {
		k.creds = map[string][]Credential{}
	}
	for _, loc := range sortedKeys(entries) {
		key, ok := entryKey(loc)
		if !ok {
			skipped = append(skipped, loc)
			continue
		}
		if !slices.Contains(k.creds[key], entries[loc]) {
			k.creds[key] = append(k.creds[key], entries[loc])
		}
		if !slices.Contains(k.index, key) {
			k.index = append(k.index, key)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	return skipped
}

// Len reports how many keys the keyring holds.
func (k *Keyring) Len() int { return len(k.index) }

// Lookup returns the credentials whose keys match the image (a reference,
// with or without tag or digest), most specific first; none when nothing
// matches or the image is not a reference.
func (k *Keyring) Lookup(image string) []Credential {
	repo, ok := RepoToPull(image)
	if !ok {
		return nil
	}
	var out []Credential
	for _, key := range k.index {
		if URLsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	return out
}

// RepoToPull is the image's repository as kubelet looks it up:
// registry/path without tag or digest, short names expanded
// (busybox → docker.io/library/busybox).
func RepoToPull(image string) (string, bool) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return "", false
	}
	repo := ref.Context()
	return canonicalHost(repo.RegistryStr()) + "/" + repo.RepositoryStr(), true
}

// entryKey turns a config key into a keyring key, as kubelet does: the
// scheme is dropped, and a /v1/ or /v2/ path stands for the host alone.
func entryKey(loc string) (string, bool) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	key := canonicalHost(u.Host)
	if p != "" && p != "/" {
		key += p
	}
	return key, true
}

// canonicalHost lower-cases a host and names Docker Hub docker.io.
func canonicalHost(host string) string {
	host = strings.ToLower(host)
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		return "docker.io"
	}
	return host
}

// URLsMatch reports whether target (host[:port][/path], no scheme) matches
// glob: the same port, as many host labels each matching its glob
// (path.Match), and glob's path a prefix of target's. An entry or
// matchImages pattern is a glob; kubelet matches the same way.
func URLsMatch(glob, target string) bool {
	g, err1 := url.Parse("https://" + glob)
	t, err2 := url.Parse("https://" + target)
	if err1 != nil || err2 != nil {
		return false
	}
	gLabels, gPort := splitHost(canonicalHost(g.Host))
	tLabels, tPort := splitHost(canonicalHost(t.Host))
	if gPort != tPort || len(gLabels) != len(tLabels) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, pattern := range gLabels {
		if ok, err := path.Match(pattern, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(strings.ToLower(host), "."), port
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
