package registry

import (
	"context"

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
}

func (c *Credentials) empty() bool {
	return c == nil || *c == Credentials{}
}

// authenticator picks the credentials for one endpoint: explicit
// credentials win; else, when useKeychain is set, the docker-style
// config.json entry of the endpoint's host, then of the reference's
// registry; else anonymous.
func authenticator(ctx context.Context, creds *Credentials, useKeychain bool, endpointHost string, upstream name.Registry) (authn.Authenticator, error) {
	if !creds.empty() {
		return authn.FromConfig(authn.AuthConfig{
			Username: creds.Username, Password: creds.Password, Auth: creds.Auth,
			IdentityToken: creds.IdentityToken, RegistryToken: creds.RegistryToken,
		}), nil
	}
	if !useKeychain {
		return authn.Anonymous, nil
	}
	if reg, err := name.NewRegistry(endpointHost); err == nil {
		a, err := authn.Resolve(ctx, authn.DefaultKeychain, reg)
		if err != nil {
			return nil, err
		}
		if a != authn.Anonymous {
			return a, nil
		}
	}
	return authn.Resolve(ctx, authn.DefaultKeychain, upstream)
}
