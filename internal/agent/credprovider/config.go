package credprovider

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	kubeletconfig "k8s.io/kubelet/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/trusted"
)

// The versions berth speaks.
const (
	ConfigAPIVersion   = "kubelet.config.k8s.io/v1"
	ConfigKind         = "CredentialProviderConfig"
	ProtocolAPIVersion = "credentialprovider.kubelet.k8s.io/v1"
)

// maxConfigSize bounds the configuration file read into memory.
const maxConfigSize = 1 << 20

// readConfig reads and checks a CredentialProviderConfig file and returns
// its providers with the paths of their executables.
func readConfig(configPath, binDir string) ([]*plugin, error) {
	data, err := readBounded(configPath)
	if err != nil {
		return nil, err
	}
	var cfg kubeletconfig.CredentialProviderConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", configPath, err)
	}
	if cfg.Kind != ConfigKind || cfg.APIVersion != ConfigAPIVersion {
		return nil, fmt.Errorf("credential provider config %s: kind %q apiVersion %q, want %s %s",
			configPath, cfg.Kind, cfg.APIVersion, ConfigKind, ConfigAPIVersion)
	}
	if len(cfg.Providers) == 0 {
		return nil, fmt.Errorf("credential provider config %s: no providers", configPath)
	}
	seen := map[string]bool{}
	var plugins []*plugin
	for i, p := range cfg.Providers {
		field := fmt.Sprintf("credential provider config %s: providers[%d]", configPath, i)
		if seen[p.Name] {
			return nil, fmt.Errorf("%s: name %q: duplicate", field, p.Name)
		}
		seen[p.Name] = true
		pl, err := newPlugin(p, binDir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		plugins = append(plugins, pl)
	}
	return plugins, nil
}

// newPlugin checks one provider as kubelet validates it.
func newPlugin(p kubeletconfig.CredentialProvider, binDir string) (*plugin, error) {
	if p.Name == "" || p.Name == "." || p.Name == ".." || strings.ContainsAny(p.Name, `/\`) {
		return nil, fmt.Errorf("name %q: want the file name of an executable in the bin dir", p.Name)
	}
	if len(p.MatchImages) == 0 {
		return nil, fmt.Errorf("name %q: matchImages: at least one pattern is required", p.Name)
	}
	for _, m := range p.MatchImages {
		if u, err := url.Parse("https://" + m); m == "" || strings.Contains(m, "://") || err != nil || u.Host == "" {
			return nil, fmt.Errorf("name %q: matchImages %q: want a host[:port][/path] pattern without a scheme", p.Name, m)
		}
	}
	if p.DefaultCacheDuration == nil || p.DefaultCacheDuration.Duration < 0 {
		return nil, fmt.Errorf("name %q: defaultCacheDuration: required, at least 0", p.Name)
	}
	if p.APIVersion != ProtocolAPIVersion {
		return nil, fmt.Errorf("name %q: apiVersion %q: berth speaks %s", p.Name, p.APIVersion, ProtocolAPIVersion)
	}
	if p.TokenAttributes != nil {
		return nil, fmt.Errorf("name %q: tokenAttributes: service account tokens are not supported by berth's agent", p.Name)
	}
	path := filepath.Join(binDir, p.Name)
	if err := checkExecutable(path); err != nil {
		return nil, fmt.Errorf("name %q: %w", p.Name, err)
	}
	env := make([]string, 0, len(p.Env))
	for _, e := range p.Env {
		if e.Name == "" || strings.Contains(e.Name, "=") {
			return nil, fmt.Errorf("name %q: env name %q: want a variable name", p.Name, e.Name)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	return &plugin{
		name: p.Name, path: path, args: p.Args, env: env, matchImages: p.MatchImages,
		defaultCache: p.DefaultCacheDuration.Duration, apiVersion: p.APIVersion,
		cache: map[string]cacheEntry{},
	}, nil
}

// readBounded reads the config file, checked on its descriptor as the
// registry auth_file is (trusted.CheckFile): whoever can write it chooses
// which programs the agent runs as root.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	defer f.Close()
	if err := trusted.CheckFile(f); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w; refused", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("credential provider config %s: larger than %d bytes", path, maxConfigSize)
	}
	return data, nil
}

// providerRisk is what a writer of a plugin's directory could do.
const providerRisk = "whoever can change it decides what berth runs as root with the pulls' credentials"

// checkBinDir checks the plugins' directory and every one above it (its
// real path): whoever can write one of them can put any program under a
// plugin's name.
func checkBinDir(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("credential provider bin dir: %w", err)
	}
	if err := trusted.CheckDirPath(real, providerRisk); err != nil {
		return fmt.Errorf("credential provider bin dir %s: %w; refused", dir, err)
	}
	return nil
}

// checkExecutable checks a plugin before it is loaded and before each
// run: an executable regular file under the trusted rule, and, when path
// is a symlink, the directory of the file it leads to too.
func checkExecutable(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	if err := trusted.CheckOwner(info); err != nil {
		return fmt.Errorf("executable %s: %w; refused", real, err)
	}
	if err := trusted.CheckDirPath(filepath.Dir(real), providerRisk); err != nil {
		return fmt.Errorf("executable %s: its directory: %w; refused", real, err)
	}
	return nil
}
