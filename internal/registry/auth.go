package registry

import (
	"context"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Credentials are the fields of a CRI AuthConfig.
type Credentials struct {
	Username      string
	Password      string
	Auth          string // base64 of "username:password"
	IdentityToken string // OAuth2 refresh token for the bearer flow
	RegistryToken string // bearer token sent as is
	// ServerAddress, when set, names the only host the credentials may be
	// sent to: host[:port], with or without a scheme and a path.
	ServerAddress string
}

func (c *Credentials) empty() bool {
	return c == nil || (c.Username == "" && c.Password == "" && c.Auth == "" && c.IdentityToken == "" && c.RegistryToken == "")
}

// authenticator picks the credentials for one endpoint.
//
// Explicit credentials go to the upstream endpoint only, never to a mirror,
// and, when they carry a server address, only when it names the
// endpoint's host or the registry of the reference. A mirror gets at most
// the docker-style config.json entry of its own host (when useKeychain is
// set). The upstream, without explicit credentials, gets the config.json
// entry of its host, else of the reference's registry. Without explicit
// credentials nor the keychain, the node-wide auth file (AuthFile) is
// looked up as kubelet matches (authFileAuthenticator). Anything else is
// anonymous.
func authenticator(ctx context.Context, opts Options, ep Endpoint, repo name.Repository) (authn.Authenticator, error) {
	upstream := repo.Registry
	if creds := opts.Credentials; !creds.empty() && !ep.Mirror {
		if !serverAddressAllows(creds.ServerAddress, ep.Host, upstream) {
			return authn.Anonymous, nil
		}
		return authn.FromConfig(authn.AuthConfig{
			Username: creds.Username, Password: creds.Password, Auth: creds.Auth,
			IdentityToken: creds.IdentityToken, RegistryToken: creds.RegistryToken,
		}), nil
	}
	if !opts.UseKeychain {
		if opts.AuthFile != "" {
			return authFileAuthenticator(opts.AuthFile, ep, repo)
		}
		return authn.Anonymous, nil
	}
	if reg, err := name.NewRegistry(ep.Host); err == nil {
		a, err := authn.Resolve(ctx, authn.DefaultKeychain, reg)
		if err != nil || a != authn.Anonymous || ep.Mirror {
			return a, err
		}
	} else if ep.Mirror {
		return authn.Anonymous, nil
	}
	return authn.Resolve(ctx, authn.DefaultKeychain, upstream)
}

// serverAddressAllows reports whether credentials bound to address (empty:
// unbound) may be sent to endpointHost, the upstream of registry reg.
func serverAddressAllows(address, endpointHost string, reg name.Registry) bool {
	if address == "" {
		return true
	}
	want := addressHost(address)
	names := []string{endpointHost, reg.RegistryStr()}
	if reg.RegistryStr() == name.DefaultRegistry {
		names = append(names, strings.TrimPrefix(name.DefaultRegistry, "index."))
	}
	for _, n := range names {
		if strings.EqualFold(want, n) {
			return true
		}
	}
	return false
}

// addressHost reduces "https://host:port/v1/" (or "host/path", "host") to
// host[:port].
func addressHost(address string) string {
	address = strings.TrimSpace(address)
	if _, rest, ok := strings.Cut(address, "://"); ok {
		address = rest
	}
	host, _, _ := strings.Cut(address, "/")
	return host
}
