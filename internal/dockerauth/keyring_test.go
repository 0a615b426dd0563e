package dockerauth

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestURLsMatch is the table of kubelet's documented matchImages and
// keyring cases (kubernetes.io docs, "Configuring nodes to authenticate to
// a private registry" and the credential provider config reference).
func TestURLsMatch(t *testing.T) {
	for _, c := range []struct {
		glob, target string
		want         bool
	}{
		{"*.kubernetes.io", "abc.kubernetes.io", true},
		{"*.*.kubernetes.io", "abc.kubernetes.io", false},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		{"*.kubernetes.io", "kubernetes.io", false},
		{"my-registry.io/images", "my-registry.io/images", true},
		{"my-registry.io/images", "my-registry.io/images/my-image", true},
		{"my-registry.io/images", "my-registry.io/images/another-image", true},
		{"*.my-registry.io/images", "sub.my-registry.io/images/my-image", true},
		{"*.my-registry.io/images", "a.sub.my-registry.io/images/my-image", false},
		{"a.sub.my-registry.io/images", "sub.my-registry.io/images/my-image", false},
		{"my-registry.io/images", "my-registry.io/other/my-image", false},
		{"123456789.dkr.ecr.us-east-1.amazonaws.com", "123456789.dkr.ecr.us-east-1.amazonaws.com/app", true},
		{"*.azurecr.io", "example.azurecr.io", true},
		{"gcr.io", "gcr.io", true},
		{"*.*.registry.io", "foo.bar.registry.io", true},
		{"registry.io:8080/path", "registry.io:8080/path/image", true},
		{"registry.io:8080", "registry.io/image", false},
		{"registry.io", "registry.io:8080/image", false},
		{"127.0.0.1:5000", "127.0.0.1:5000/private/app", true},
		{"REGISTRY.example", "registry.example/app", true},
		{"index.docker.io", "docker.io/library/busybox", true},
		{"[bad", "registry.io/app", false},
	} {
		if got := URLsMatch(c.glob, c.target); got != c.want {
			t.Errorf("URLsMatch(%q, %q) = %t, want %t", c.glob, c.target, got, c.want)
		}
	}
}

// TestLookupOrder: every matching entry, most specific key first, several
// under one key in the order they were added; Docker Hub's keys in all
// their spellings.
func TestLookupOrder(t *testing.T) {
	var k Keyring
	k.Add(map[string]Credential{"quay.io": {Username: "host", Source: "a"}})
	k.Add(map[string]Credential{"https://quay.io/coreos": {Username: "path", Source: "b"}})
	k.Add(map[string]Credential{"*.io": {Username: "glob", Source: "c"}})
	k.Add(map[string]Credential{"http://quay.io/v2/": {Username: "host2", Source: "d"}})
	k.Add(map[string]Credential{"https://index.docker.io/v1/": {Username: "hub", Source: "e"}})
	k.Add(map[string]Credential{"docker.io/library": {Username: "hub-library", Source: "f"}})
	k.Add(map[string]Credential{"quay.io:5000": {Username: "port", Source: "g"}})
	for _, c := range []struct {
		image string
		want  []string
	}{
		{"quay.io/coreos/etcd:v3", []string{"path", "host", "host2", "glob"}},
		{"quay.io/other/app@sha256:" + strings.Repeat("a", 64), []string{"host", "host2", "glob"}},
		{"busybox", []string{"hub-library", "hub", "glob"}},
		{"docker.io/someone/app", []string{"hub", "glob"}},
		{"index.docker.io/library/busybox:1", []string{"hub-library", "hub", "glob"}},
		{"quay.io:5000/app", []string{"port"}},
		{"registry.example/app", nil},
		{"NOT A REFERENCE", nil},
	} {
		var got []string
		for _, cred := range k.Lookup(c.image) {
			got = append(got, cred.Username)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Lookup(%q) = %v, want %v", c.image, got, c.want)
		}
	}
}

func TestAddSkipsKeysThatAreNotURLs(t *testing.T) {
	var k Keyring
	skipped := k.Add(map[string]Credential{"https://": {Username: "x"}, "%zz": {Username: "y"}, "ok.example": {Username: "z"}})
	if !slices.Equal(skipped, []string{"%zz", "https://"}) || k.Len() != 1 {
		t.Errorf("Add: skipped %v, %d keys; want [%%zz https://] and 1", skipped, k.Len())
	}
}

func TestParseSecret(t *testing.T) {
	const pw = "s3cret-PASSWORD"
	auth := "dXNlcjpzM2NyZXQtUEFTU1dPUkQ=" // user:s3cret-PASSWORD
	for _, c := range []struct {
		what, typ, key, data string
		wantUser, wantErr    string
		notRegistry          bool
	}{
		{what: "dockerconfigjson", typ: SecretTypeDockerConfigJSON, key: SecretKeyDockerConfigJSON,
			data: `{"auths":{"reg.example":{"username":"u","password":"` + pw + `"}}}`, wantUser: "u"},
		{what: "auth wins", typ: SecretTypeDockerConfigJSON, key: SecretKeyDockerConfigJSON,
			data: `{"auths":{"reg.example":{"username":"u","password":"p","auth":"` + auth + `"}}}`, wantUser: "user"},
		{what: "dockercfg", typ: SecretTypeDockercfg, key: SecretKeyDockercfg,
			data: `{"reg.example":{"auth":"` + auth + `","email":"a@b"}}`, wantUser: "user"},
		{what: "bad base64", typ: SecretTypeDockercfg, key: SecretKeyDockercfg,
			data: `{"reg.example":{"auth":"%%%"}}`, wantErr: `entry "reg.example": field auth: not base64`},
		{what: "auth without colon", typ: SecretTypeDockercfg, key: SecretKeyDockercfg,
			data: `{"reg.example":{"auth":"dXNlcg=="}}`, wantErr: "not base64 of user:password"},
		{what: "not JSON", typ: SecretTypeDockerConfigJSON, key: SecretKeyDockerConfigJSON,
			data: `{"auths":{"reg.example":{"password":"` + pw + `"`, wantErr: "not a docker config.json: invalid JSON"},
		{what: "wrong JSON type", typ: SecretTypeDockerConfigJSON, key: SecretKeyDockerConfigJSON,
			data: `{"auths":{"reg.example":{"password":12}}}`, wantErr: "not a docker config.json: field"},
		{what: "opaque", typ: "Opaque", key: SecretKeyDockerConfigJSON, data: `{}`, wantErr: "type Opaque", notRegistry: true},
		{what: "no type", typ: "", key: SecretKeyDockerConfigJSON, data: `{}`, wantErr: "type Opaque", notRegistry: true},
		{what: "missing key", typ: SecretTypeDockerConfigJSON, key: "other", data: `{}`, wantErr: "without key .dockerconfigjson", notRegistry: true},
	} {
		creds, err := ParseSecret(c.typ, map[string][]byte{c.key: []byte(c.data)}, `secret "regcred"`)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), `secret "regcred"`) {
				t.Errorf("%s: error %v, want one naming the secret and %q", c.what, err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), pw) {
				t.Errorf("%s: error %q prints the password", c.what, err)
			}
			if got := errors.Is(err, ErrNotRegistrySecret); got != c.notRegistry {
				t.Errorf("%s: errors.Is(ErrNotRegistrySecret) = %t, want %t", c.what, got, c.notRegistry)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		got := creds["reg.example"]
		if got.Username != c.wantUser || got.Source != `secret "regcred"` {
			t.Errorf("%s: %+v, want user %q from the secret", c.what, got, c.wantUser)
		}
		if strings.Contains(got.String(), got.Password) {
			t.Errorf("%s: String() %q prints the password", c.what, got)
		}
	}
}
