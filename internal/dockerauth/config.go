package dockerauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Secret types and keys of registry credentials (k8s.io/api/core/v1's
// SecretTypeDockerConfigJson / DockerConfigJsonKey, SecretTypeDockercfg /
// DockerConfigKey): names of types and keys, not credentials.
//
//nolint:gosec // G101: these are Secret type and key names
const (
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	SecretKeyDockerConfigJSON  = ".dockerconfigjson"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	SecretKeyDockercfg         = ".dockercfg"
)

// ErrNotRegistrySecret marks a Secret that is not of a registry credential
// type, or lacks its key.
var ErrNotRegistrySecret = errors.New("not a registry credential secret")

// entry is one credential of a config file, as docker writes it.
type entry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Email         string `json:"email,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// ParseConfigJSON reads a docker config.json ({"auths": {key: entry}}, any
// other field ignored). source names the credentials' origin in messages
// and in each Credential.
func ParseConfigJSON(data []byte, source string) (map[string]Credential, error) {
	var cfg struct {
		Auths map[string]entry `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: not a docker config.json: %w", source, scrub(err))
	}
	return credentials(cfg.Auths, source)
}

// ParseDockercfg reads a legacy ~/.dockercfg: the map of entries alone.
func ParseDockercfg(data []byte, source string) (map[string]Credential, error) {
	var auths map[string]entry
	if err := json.Unmarshal(data, &auths); err != nil {
		return nil, fmt.Errorf("%s: not a .dockercfg: %w", source, scrub(err))
	}
	return credentials(auths, source)
}

// ParseSecret reads a Secret of type kubernetes.io/dockerconfigjson (key
// .dockerconfigjson) or kubernetes.io/dockercfg (key .dockercfg), as
// kubelet takes them for imagePullSecrets. Any other type, or the type
// without its key, is ErrNotRegistrySecret.
func ParseSecret(secretType string, data map[string][]byte, source string) (map[string]Credential, error) {
	switch secretType {
	case SecretTypeDockerConfigJSON:
		if b := data[SecretKeyDockerConfigJSON]; len(b) > 0 {
			return ParseConfigJSON(b, source)
		}
		return nil, fmt.Errorf("%s: type %s without key %s: %w", source, secretType, SecretKeyDockerConfigJSON, ErrNotRegistrySecret)
	case SecretTypeDockercfg:
		if b := data[SecretKeyDockercfg]; len(b) > 0 {
			return ParseDockercfg(b, source)
		}
		return nil, fmt.Errorf("%s: type %s without key %s: %w", source, secretType, SecretKeyDockercfg, ErrNotRegistrySecret)
	}
	if secretType == "" {
		secretType = "Opaque"
	}
	return nil, fmt.Errorf("%s: type %s, want %s or %s: %w", source, secretType,
		SecretTypeDockerConfigJSON, SecretTypeDockercfg, ErrNotRegistrySecret)
}

// credentials converts entries; "auth" (base64 of user:password) wins over
// username and password, as in kubelet.
func credentials(auths map[string]entry, source string) (map[string]Credential, error) {
	out := make(map[string]Credential, len(auths))
	for key, e := range auths {
		c := Credential{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken, Source: source}
		if e.Auth != "" {
			user, pass, err := decodeAuth(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("%s: entry %q: field auth: %w", source, key, err)
			}
			c.Username, c.Password = user, pass
		}
		out[key] = c
	}
	return out, nil
}

func decodeAuth(auth string) (string, string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth))
	if err != nil {
		return "", "", errors.New("not base64")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New("not base64 of user:password")
	}
	return user, pass, nil
}

// scrub keeps a JSON error's position and kind but none of the input it
// may quote (a syntax error can echo a piece of a password).
func scrub(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("invalid JSON at byte %d", syntax.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("field %q: want %s, not a JSON %s", typ.Field, typ.Type, typ.Value)
	}
	return errors.New("invalid JSON")
}
