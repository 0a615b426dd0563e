package registry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/berth-dev/berth/internal/dockerauth"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/trusted"
)

// maxAuthFileSize bounds the node-wide credentials file read into memory.
const maxAuthFileSize = 1 << 20

// CheckAuthFile reads the node-wide credentials file ([registry]
// auth_file, a docker config.json) as a pull would, and reports why it
// would be refused: not a regular file, not owned by root, writable by
// others, too big or not a config.json. A missing file is no error (it
// holds no credentials); nor is an empty path.
func CheckAuthFile(path string) error {
	if path == "" {
		return nil
	}
	_, err := readAuthFile(path)
	return err
}

// readAuthFile reads and parses the credentials file. Its owner and mode
// are checked on the open descriptor, so a file swapped in after the check
// is not what is read. A missing file is an empty keyring.
func readAuthFile(path string) (*dockerauth.Keyring, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &dockerauth.Keyring{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry auth_file %s: %v: %w", path, err, errdefs.ErrFailedPrecondition)
	}
	defer f.Close()
	// Whoever can write it chooses where berth sends credentials.
	if err := trusted.CheckFile(f); err != nil {
		return nil, fmt.Errorf("registry auth_file %s: %v; refused: %w", path, err, errdefs.ErrFailedPrecondition)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAuthFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("registry auth_file %s: %v: %w", path, err, errdefs.ErrFailedPrecondition)
	}
	if len(data) > maxAuthFileSize {
		return nil, fmt.Errorf("registry auth_file %s: larger than %d bytes; refused: %w", path, maxAuthFileSize, errdefs.ErrFailedPrecondition)
	}
	creds, err := dockerauth.ParseConfigJSON(data, "registry auth_file "+path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, errdefs.ErrFailedPrecondition)
	}
	var k dockerauth.Keyring
	k.Add(creds)
	return &k, nil
}

// authFileAuthenticator picks the entry of the credentials file for an
// endpoint: for the upstream, the first entry matching the image's
// repository, else the endpoint's host; for a mirror, only an entry
// matching the mirror's host.
func authFileAuthenticator(path string, ep Endpoint, repo name.Repository) (authn.Authenticator, error) {
	k, err := readAuthFile(path)
	if err != nil {
		return nil, err
	}
	targets := []string{ep.Host + "/" + repo.RepositoryStr()}
	if !ep.Mirror {
		targets = append([]string{repo.Name()}, targets...)
	}
	for _, target := range targets {
		if creds := k.Lookup(target); len(creds) > 0 {
			c := creds[0]
			return authn.FromConfig(authn.AuthConfig{
				Username: c.Username, Password: c.Password,
				IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken,
			}), nil
		}
	}
	return authn.Anonymous, nil
}
