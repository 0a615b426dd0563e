package credprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/berth-dev/berth/internal/dockerauth"
)

// execTimeout bounds one run of a plugin.
var execTimeout = time.Minute

// maxResponseSize bounds a plugin's stdout.
const maxResponseSize = 1 << 20

// Providers are the configured credential provider plugins. Safe for
// concurrent use.
type Providers struct {
	plugins []*plugin
	log     *slog.Logger
	now     func() time.Time
}

// Load reads kubelet's CredentialProviderConfig at configPath; the
// providers' executables are in binDir.
func Load(configPath, binDir string, log *slog.Logger) (*Providers, error) {
	if binDir == "" {
		return nil, errors.New("credential providers: --image-credential-provider-bin-dir is required with --image-credential-provider-config")
	}
	if err := checkBinDir(binDir); err != nil {
		return nil, err
	}
	plugins, err := readConfig(configPath, binDir)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Providers{plugins: plugins, log: log, now: time.Now}, nil
}

// Lookup returns the credentials the providers whose matchImages match
// image give for it, providers in their configured order, each one's most
// specific entries first.
func (p *Providers) Lookup(ctx context.Context, image string) []dockerauth.Credential {
	repo, ok := dockerauth.RepoToPull(image)
	if !ok {
		return nil
	}
	var out []dockerauth.Credential
	for _, pl := range p.plugins {
		if !pl.matches(repo) {
			continue
		}
		auth, err := pl.provide(ctx, repo, p.now)
		if err != nil {
			p.log.Warn("credential provider failed; pulling without its credentials", "provider", pl.name, "image", image, "error", err)
			continue
		}
		var k dockerauth.Keyring
		k.Add(auth)
		out = append(out, k.Lookup(repo)...)
	}
	return out
}

// plugin is one provider and its cache.
type plugin struct {
	name, path   string
	args, env    []string
	matchImages  []string
	defaultCache time.Duration
	apiVersion   string

	mu    sync.Mutex
	cache map[string]cacheEntry // by image, registry host or "global"
}

type cacheEntry struct {
	auth    map[string]dockerauth.Credential
	expires time.Time
}

// globalCacheKey is the cache key of a Global answer.
const globalCacheKey = "global"

func (pl *plugin) matches(repo string) bool {
	for _, m := range pl.matchImages {
		if dockerauth.URLsMatch(m, repo) {
			return true
		}
	}
	return false
}

// provide answers from the cache (the image's entry, its registry's, the
// global one) or runs the plugin and caches its answer.
func (pl *plugin) provide(ctx context.Context, repo string, now func() time.Time) (map[string]dockerauth.Credential, error) {
	registry, _, _ := strings.Cut(repo, "/")
	if auth, ok := pl.cached(now(), repo, registry, globalCacheKey); ok {
		return auth, nil
	}
	resp, err := pl.run(ctx, repo)
	if err != nil {
		return nil, err
	}
	auth := map[string]dockerauth.Credential{}
	for key, a := range resp.Auth {
		auth[key] = dockerauth.Credential{Username: a.Username, Password: a.Password, Source: fmt.Sprintf("credential provider %q", pl.name)}
	}
	ttl := pl.defaultCache
	if resp.CacheDuration != nil {
		ttl = resp.CacheDuration.Duration
	}
	if ttl > 0 {
		key := map[credentialv1.PluginCacheKeyType]string{
			credentialv1.ImagePluginCacheKeyType:    repo,
			credentialv1.RegistryPluginCacheKeyType: registry,
			credentialv1.GlobalPluginCacheKeyType:   globalCacheKey,
		}[resp.CacheKeyType]
		pl.mu.Lock()
		pl.cache[key] = cacheEntry{auth: auth, expires: now().Add(ttl)}
		pl.mu.Unlock()
	}
	return auth, nil
}

// cached returns the first live cache entry under keys, dropping expired
// ones.
func (pl *plugin) cached(now time.Time, keys ...string) (map[string]dockerauth.Credential, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for k, e := range pl.cache {
		if !now.Before(e.expires) {
			delete(pl.cache, k)
		}
	}
	for _, k := range keys {
		if e, ok := pl.cache[k]; ok {
			return e.auth, true
		}
	}
	return nil, false
}

// run executes the plugin once and checks its answer.
func (pl *plugin) run(ctx context.Context, repo string) (*credentialv1.CredentialProviderResponse, error) {
	req, err := json.Marshal(credentialv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{Kind: "CredentialProviderRequest", APIVersion: pl.apiVersion},
		Image:    repo,
	})
	if err != nil {
		return nil, err
	}
	if err := checkExecutable(pl.path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var stdout, stderr limitedBuffer
	stdout.limit, stderr.limit = maxResponseSize, 512
	err = runGroup(pl.command(ctx, req, &stdout, &stderr))
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: no answer within %s", pl.path, execTimeout)
	case errors.Is(err, exec.ErrWaitDelay):
		// It answered and exited; what it left running held its output
		// and was killed: the answer is what it wrote.
	case err != nil:
		return nil, fmt.Errorf("%s: %v: %s", pl.path, err, strings.TrimSpace(stderr.String()))
	}
	if stdout.over {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", pl.path, maxResponseSize)
	}
	return pl.decode(stdout.Bytes())
}

// command is one run of the plugin, in a process group of its own.
func (pl *plugin) command(ctx context.Context, req []byte, stdout, stderr io.Writer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, pl.path, pl.args...)
	cmd.Env = append(os.Environ(), pl.env...)
	cmd.Stdin = bytes.NewReader(req)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A child that holds stdout or stderr open past the plugin's exit (or
	// the timeout's kill) does not hold Wait longer than this.
	cmd.WaitDelay = waitDelay
	return cmd
}

// waitDelay bounds the wait for a plugin's output once it has exited.
var waitDelay = time.Second

// runGroup runs cmd and then kills what is left of its process group:
// a plugin that leaves a child running (a shell script that backgrounds
// something) neither hangs the pull nor leaves it behind. The group is
// killed while the plugin is a zombie, before Wait reaps it: once reaped,
// its pid (the group's id) may be another process group's leader, and a
// kill of the group would reach that one (it killed a test's containerd).
func runGroup(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := waitExited(cmd.Process.Pid); err == nil {
		_ = killGroup(cmd) // ESRCH once nothing is left
	}
	return cmd.Wait()
}

// waitExited waits until the process pid has exited without reaping it,
// so its pid stays its own until Wait.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func killGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// decode checks the answer as kubelet does: its kind and apiVersion, a
// known cacheKeyType, no negative cacheDuration.
func (pl *plugin) decode(out []byte) (*credentialv1.CredentialProviderResponse, error) {
	var resp credentialv1.CredentialProviderResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("%s: answer is not a CredentialProviderResponse (JSON)", pl.path)
	}
	if resp.Kind != "CredentialProviderResponse" || resp.APIVersion != pl.apiVersion {
		return nil, fmt.Errorf("%s: answer kind %q apiVersion %q, want CredentialProviderResponse %s", pl.path, resp.Kind, resp.APIVersion, pl.apiVersion)
	}
	switch resp.CacheKeyType {
	case credentialv1.ImagePluginCacheKeyType, credentialv1.RegistryPluginCacheKeyType, credentialv1.GlobalPluginCacheKeyType:
	default:
		return nil, fmt.Errorf("%s: answer cacheKeyType %q, want Image, Registry or Global", pl.path, resp.CacheKeyType)
	}
	if resp.CacheDuration != nil && resp.CacheDuration.Duration < 0 {
		return nil, fmt.Errorf("%s: answer cacheDuration %s is negative", pl.path, resp.CacheDuration.Duration)
	}
	return &resp, nil
}

// limitedBuffer keeps the first limit bytes written and notes the rest.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

var _ io.Writer = (*limitedBuffer)(nil)
