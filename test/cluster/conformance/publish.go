package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth-dev/berth/test/registry"
)

// upstreamRegistry is the one registry the specs' images come from.
const upstreamRegistry = "registry.k8s.io"

// Push pushes every image into reg under its repository path, so that
// registry.k8s.io/<path> is <reg.Host>/<path>.
func Push(reg *registry.Registry, images map[string]v1.Image) error {
	names := make([]string, 0, len(images))
	for name := range images {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		local, err := localName(name)
		if err != nil {
			return err
		}
		if _, err := reg.Push(local, images[name]); err != nil {
			return fmt.Errorf("push %s as %s: %w", name, local, err)
		}
	}
	return nil
}

// localName is where the local registry keeps an upstream image: the same
// repository path, without the registry host.
func localName(ref string) (string, error) {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || host != upstreamRegistry || rest == "" {
		return "", fmt.Errorf("image %q: not under %s/", ref, upstreamRegistry)
	}
	return rest, nil
}

// HostsFiles are berth's hosts.toml files, by registry host, that serve
// registry.k8s.io from the local registry at host (plain HTTP on
// loopback). The local registry is the server, not a mirror: a name it
// lacks fails at once instead of going to the network.
func HostsFiles(host string) map[string]string {
	return map[string]string{upstreamRegistry: fmt.Sprintf("server = %q\n", "http://"+host)}
}

// WriteHosts writes HostsFiles into hostsDir (berth's [registry] hosts_dir),
// one <registry>/hosts.toml each; other registries' files are left alone.
func WriteHosts(hostsDir, host string) error {
	for name, content := range HostsFiles(host) {
		dir := filepath.Join(hostsDir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("hosts dir for %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(content), 0o644); err != nil {
			return fmt.Errorf("hosts.toml for %s: %w", name, err)
		}
	}
	return nil
}
